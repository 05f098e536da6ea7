// write_file_atomically() on POSIX systems: a temporary file beside the target, fsync, rename over it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "infer/errors.h"
#include "manifest/writer.h"

namespace infer::manifest {
namespace {

namespace fs = std::filesystem;

// Where the manifest's bytes go: path itself, or the file its symlinks end at, so that a link
// stays a link (a deployment may point VERSIONS.toml at a shared copy). A dangling link names
// the file to create.
fs::path final_target(const fs::path& path) {
  fs::path p = fs::absolute(path);
  for (int hops = 0; hops < 40; ++hops) {  // 40: the kernel's own limit on links followed (ELOOP)
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) throw InputError(path.string(), "cannot write: cannot read the link: " + ec.message());
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  throw InputError(path.string(), "cannot write: too many levels of symbolic links");
}

// A new file in the target's folder (so that rename is atomic), removed unless committed.
class TempFile {
 public:
  // mode as for open(2): a new manifest gets 0644 less the umask, as any file the user writes; a
  // replacement starts private and gets the old file's mode before any byte is written.
  TempFile(const fs::path& target, mode_t mode) {
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      name_ = (target.parent_path() /
               ("." + target.filename().string() + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(attempt)))
                  .string();
      fd_ = open(name_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
      if (fd_ < 0 && errno != EEXIST) break;
    }
  }
  ~TempFile() {
    if (fd_ >= 0) close(fd_);
    if (!committed_) unlink(name_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }  // -1 when it could not be created (errno says why)
  const std::string& name() const { return name_; }
  void committed() { committed_ = true; }

  bool write(const std::string& text) const {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n < 0 && errno != EINTR) return false;
      if (n > 0) done += static_cast<std::size_t>(n);
    }
    return true;
  }
  [[noreturn]] void fail(const fs::path& path) const {
    throw InputError(path.string(), std::string("cannot write: ") + std::strerror(errno));
  }

 private:
  int fd_ = -1;
  std::string name_;
  bool committed_ = false;
};

// The rewritten manifest keeps the old one's mode (0640 stays 0640: a deployment may restrict who
// reads it) and, where the user may set them, its owner and group. Only root may give a file away,
// so fchown failing for others is expected and leaves the writer's ownership. fchmod comes last:
// fchown may clear the set-user-ID and set-group-ID bits.
bool keep_owner_and_mode(int fd, const struct stat& old) {
  if (fchown(fd, old.st_uid, old.st_gid) != 0) (void)!fchown(fd, static_cast<uid_t>(-1), old.st_gid);
  return fchmod(fd, old.st_mode & 07777) == 0;
}

// After rename the new name is durable only once the folder is synced; a failure here cannot undo
// the rename, and the content itself was synced, so it is not an error.
void sync_folder(const fs::path& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

}  // namespace

void write_file_atomically(const fs::path& path, const std::string& text) {
  const fs::path target = final_target(path);
  struct stat st {};
  const bool exists = stat(target.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    throw InputError(path.string(), "cannot write: " + target.string() +
                                        (S_ISDIR(st.st_mode) ? " is a directory" : " is not a regular file"));
  }
  TempFile tmp(target, exists ? 0600 : 0644);
  if (tmp.fd() < 0) tmp.fail(path);
  if (exists && !keep_owner_and_mode(tmp.fd(), st)) tmp.fail(path);
  if (!tmp.write(text)) tmp.fail(path);
  if (fsync(tmp.fd()) != 0 || std::rename(tmp.name().c_str(), target.c_str()) != 0) tmp.fail(path);
  tmp.committed();
  sync_folder(target.parent_path());
}

}  // namespace infer::manifest

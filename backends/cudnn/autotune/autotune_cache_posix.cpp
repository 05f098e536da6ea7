// The autotune cache's file on Linux: open/fstat/read, mkostemp/fsync/rename, the XDG cache folder.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "backends/cudnn/autotune/autotune_cache.h"
#include "backends/cudnn/autotune/autotune_cache_file.h"

namespace infer::cudnn {

namespace fs = std::filesystem;

namespace detail {
namespace {

std::runtime_error failure(const std::string& what, int err) { return std::runtime_error(what + std::strerror(err)); }

// Closes the descriptor when the scope ends.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

const char* const kCacheLocationHint = "set INFER_AUTOTUNE_CACHE or HOME";

std::optional<std::string> read_cache_file(const fs::path& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw failure("cannot read: ", errno);
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) throw failure("cannot read: ", errno);
  if (S_ISDIR(st.st_mode)) throw std::runtime_error("is a folder, expected a file");
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("cannot read: not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > kAutotuneCacheMaxBytes) {
    throw std::runtime_error("too large: " + std::to_string(st.st_size) + " bytes, the limit is 16 MiB");
  }
  // Up to one byte past the limit: a file that grows meanwhile is still caught by parse().
  std::string text(kAutotuneCacheMaxBytes + 1, '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw failure("cannot read: ", errno);
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return text;
}

void replace_cache_file(const fs::path& path, const std::string& text) {
  const fs::path dir = fs::absolute(path).parent_path();
  // Same folder as the target, so that rename() replaces it atomically (same file system).
  std::string tmp = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  Fd fd(mkostemp(tmp.data(), O_CLOEXEC));
  if (fd.get() < 0) throw failure("cannot create a temporary file in " + dir.string() + ": ", errno);
  int err = 0;
  std::size_t done = 0;
  while (done < text.size() && err == 0) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (err == 0 && fchmod(fd.get(), 0644) != 0) err = errno;
  if (err == 0 && fsync(fd.get()) != 0) err = errno;
  if (close(fd.release()) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    unlink(tmp.c_str());
    throw failure("cannot write: ", err);
  }
  // Make the rename itself durable; a failure here leaves a complete file, so it is not an error.
  const Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() >= 0) (void)fsync(dfd.get());
}

}  // namespace detail

fs::path default_autotune_cache_path() {
  if (const char* p = std::getenv("INFER_AUTOTUNE_CACHE"); p && *p) return p;
  if (const char* p = std::getenv("XDG_CACHE_HOME"); p && *p && fs::path(p).is_absolute()) {
    return fs::path(p) / "infer" / "autotune.json";
  }
  if (const char* p = std::getenv("HOME"); p && *p) return fs::path(p) / ".cache" / "infer" / "autotune.json";
  return {};
}

}  // namespace infer::cudnn

// InputFile on POSIX systems: stat before open, O_NONBLOCK, fstat after, pread.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "infer/errors.h"
#include "platform/file_kind.h"
#include "platform/input_file.h"

namespace infer {
namespace {

// Why stat() or open() failed, in the words a user can act on. The two that strerror words
// misleadingly for a file name are spelt out: EACCES may come from a folder on the path (no search
// permission) as well as from the file, and ELOOP is nearly always a loop of symbolic links.
std::string open_problem(int error, bool opening) {
  switch (error) {
    case ENOENT: return "no such file";
    case ENOTDIR: return "no such file (a part of the path is not a folder)";
    case EACCES:
      return opening ? "permission denied (the file is not readable)"
                     : "permission denied (a folder on the path cannot be searched)";
    case ELOOP: return "symbolic link loop (too many levels of symbolic links)";
    case ENAMETOOLONG: return "file name too long";
    default: return std::string("cannot open: ") + std::strerror(error);
  }
}

[[noreturn]] void refuse_kind(const std::string& name, mode_t mode) {
  if (S_ISDIR(mode)) throw NotRegularFileError(name, "is a directory");
  throw NotRegularFileError(name, std::string("is ") + file_kind(mode) + ", not a regular file");
}

}  // namespace

InputFile::InputFile(const std::filesystem::path& path) : name_(path.string()) {
  // stat() first, so that a device or a FIFO is never opened: opening one can block or have effects.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw InputError(name_, open_problem(errno, false));
  if (!S_ISREG(st.st_mode)) refuse_kind(name_, st.st_mode);
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(name_, open_problem(errno, true));
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t mode = st.st_mode;
    close(fd);
    refuse_kind(name_, mode);
  }
  handle_ = fd;
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (handle_ >= 0) close(static_cast<int>(handle_));
}

void InputFile::read_at(std::uint64_t offset, void* out, std::size_t count) const {
  auto* to = static_cast<unsigned char*>(out);
  while (count > 0) {
    const ssize_t n = pread(static_cast<int>(handle_), to, count, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(name_, std::string("read error: ") + std::strerror(errno));
    if (n == 0) throw InputError(name_, "the file became shorter while it was read");
    to += n;
    offset += static_cast<std::uint64_t>(n);
    count -= static_cast<std::size_t>(n);
  }
}

}  // namespace infer

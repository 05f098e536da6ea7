#include "input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "errors.h"
#include "file_kind.h"

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

std::string format_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (v >= 1024.0 && unit < 5) v /= 1024.0, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, v < 10.0 ? "%.1f %s" : "%.0f %s", v, units[unit]);
  return text;
}

InputFile::InputFile(const std::filesystem::path& path) : name_(path.string()) {
  // stat() first, so that a device or a FIFO is never opened: opening one can block or have effects.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw InputError(name_, open_problem(errno, false));
  if (!S_ISREG(st.st_mode)) refuse_kind(name_, st.st_mode);
  fd_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw InputError(name_, open_problem(errno, true));
  if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t mode = st.st_mode;
    close(fd_);
    fd_ = -1;
    refuse_kind(name_, mode);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) close(fd_);
}

InputFile::InputFile(InputFile&& other) noexcept : name_(std::move(other.name_)), fd_(other.fd_), size_(other.size_) {
  other.fd_ = -1;
}

void InputFile::read_at(std::uint64_t offset, void* out, std::size_t count) const {
  auto* to = static_cast<unsigned char*>(out);
  while (count > 0) {
    const ssize_t n = pread(fd_, to, count, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(name_, std::string("read error: ") + std::strerror(errno));
    if (n == 0) throw InputError(name_, "the file became shorter while it was read");
    to += n;
    offset += static_cast<std::uint64_t>(n);
    count -= static_cast<std::size_t>(n);
  }
}

std::vector<unsigned char> InputFile::read_all(std::uint64_t max_bytes, std::string_view what) const {
  if (size_ > max_bytes) {
    throw InputError(name_, "file is " + format_bytes(size_) + ", over the limit of " + format_bytes(max_bytes) +
                                " for " + std::string(what));
  }
  // Exactly the size fstat gave: a file that grows meanwhile is read as it was when opened.
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size_));
  read_at(0, bytes.data(), bytes.size());
  return bytes;
}

std::vector<unsigned char> read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                                           std::string_view what) {
  return InputFile(path).read_all(max_bytes, what);
}

std::string read_text_file(const std::filesystem::path& path, std::uint64_t max_bytes, std::string_view what) {
  const std::vector<unsigned char> bytes = read_input_file(path, max_bytes, what);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace infer

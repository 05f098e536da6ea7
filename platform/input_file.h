// Opening and reading the files a user names (images, the model TOML, the weights, manifests) so
// that no file can block, exhaust memory or be read for longer than its size allows: regular files
// only, the size checked before any byte is read, and never more read than that size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace infer {

// An open regular file. A FIFO, a device, a socket or a directory is refused before it is opened
// for reading (opening a FIFO blocks until a writer comes; reading /dev/zero never ends), and again
// after (O_NONBLOCK and fstat), so one swapped in between is refused too. On Windows the same with
// its calls (input_file_windows.cpp): a folder is refused before opening, and a handle that is not
// a disk file (a console, NUL, a pipe) after.
class InputFile {
 public:
  // Throws InputError(path, problem): "no such file", "permission denied", "symbolic link loop",
  // "is a directory", "is a FIFO, not a regular file", ...
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  InputFile& operator=(InputFile&&) = delete;

  // The path as given, UTF-8 on Windows, for messages.
  const std::string& name() const { return name_; }
  // The size when the file was opened.
  std::uint64_t size() const { return size_; }

  // Refuses (InputError naming the file) a file over max_bytes; `what` names the kind of file ("an image").
  void check_size(std::uint64_t max_bytes, std::string_view what) const;
  // Reads `count` bytes at `offset`. Throws InputError if the file ends first (it shrank).
  void read_at(std::uint64_t offset, void* out, std::size_t count) const;
  // The whole file, refused (check_size) before any byte is read when it is over max_bytes.
  std::vector<unsigned char> read_all(std::uint64_t max_bytes, std::string_view what) const;

 private:
  std::string name_;
  // The open file: a POSIX descriptor (input_file_posix.cpp) or a Windows HANDLE
  // (input_file_windows.cpp); -1 when there is none.
  std::intptr_t handle_ = -1;
  std::uint64_t size_ = 0;
};

// Opens and reads a whole file as InputFile::read_all does.
std::vector<unsigned char> read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                                           std::string_view what);
std::string read_text_file(const std::filesystem::path& path, std::uint64_t max_bytes, std::string_view what);

// "12.5 MiB", "3 bytes": a size for messages.
std::string format_bytes(std::uint64_t bytes);

}  // namespace infer

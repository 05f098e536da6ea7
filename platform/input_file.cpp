#include "platform/input_file.h"

#include <cstdio>
#include <utility>

#include "infer/errors.h"

namespace infer {

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

// The same on every system: handle_ is -1 when there is none (the destructors test that).
InputFile::InputFile(InputFile&& other) noexcept
    : name_(std::move(other.name_)), handle_(other.handle_), size_(other.size_) {
  other.handle_ = -1;
}

void InputFile::check_size(std::uint64_t max_bytes, std::string_view what) const {
  if (size_ > max_bytes) {
    // Exact byte counts where the rounded sizes read the same ("4.0 KiB, over the limit of 4.0 KiB").
    std::string size = format_bytes(size_), limit = format_bytes(max_bytes);
    if (size == limit) size = std::to_string(size_) + " bytes", limit = std::to_string(max_bytes) + " bytes";
    throw InputError(name_, "file is " + size + ", over the limit of " + limit + " for " + std::string(what));
  }
}

std::vector<unsigned char> InputFile::read_all(std::uint64_t max_bytes, std::string_view what) const {
  check_size(max_bytes, what);
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

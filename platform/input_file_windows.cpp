// InputFile on Windows: the attributes before opening (a folder is refused unopened), CreateFileW
// on the wide path, GetFileType after (a console, NUL or a pipe is not a disk file), positioned
// ReadFile. Names in messages are UTF-8.
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <algorithm>
#include <limits>

#include "infer/errors.h"
#include "platform/input_file.h"

namespace infer {
namespace {

HANDLE as_handle(std::intptr_t h) { return reinterpret_cast<HANDLE>(h); }

// GetLastError's code in the words of the POSIX version (input_file_posix.cpp), so that a message
// reads the same on both systems.
std::string open_problem(DWORD error, bool opening) {
  switch (error) {
    case ERROR_FILE_NOT_FOUND: return "no such file";
    case ERROR_PATH_NOT_FOUND:
    case ERROR_DIRECTORY: return "no such file (a part of the path is not a folder)";
    case ERROR_ACCESS_DENIED:
      return opening ? "permission denied (the file is not readable)"
                     : "permission denied (a folder on the path cannot be searched)";
    case ERROR_SHARING_VIOLATION: return "in use by another program (sharing violation)";
    case ERROR_FILENAME_EXCED_RANGE: return "file name too long";
    case ERROR_INVALID_NAME: return "invalid file name";
    default: return "cannot open: Windows error " + std::to_string(error);
  }
}

const char* kind_of(DWORD type) {
  switch (type) {
    case FILE_TYPE_CHAR: return "a character device";
    case FILE_TYPE_PIPE: return "a pipe";
    default: return "a special file";
  }
}

}  // namespace

InputFile::InputFile(const std::filesystem::path& path) : name_(path.u8string()) {
  const DWORD attributes = GetFileAttributesW(path.c_str());
  if (attributes == INVALID_FILE_ATTRIBUTES) {
    const DWORD error = GetLastError();
    // Device names (NUL, CON) have no attributes on some systems; CreateFileW decides for them.
    if (error != ERROR_INVALID_PARAMETER && error != ERROR_INVALID_FUNCTION)
      throw InputError(name_, open_problem(error, false));
  } else if ((attributes & FILE_ATTRIBUTE_DIRECTORY) != 0) {
    throw NotRegularFileError(name_, "is a directory");
  }
  // Others may read, write or delete the file meanwhile, as on POSIX: what was opened is read.
  const HANDLE h = CreateFileW(path.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                               nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) throw InputError(name_, open_problem(GetLastError(), true));
  const DWORD type = GetFileType(h);
  LARGE_INTEGER size{};
  if (type != FILE_TYPE_DISK || !GetFileSizeEx(h, &size) || size.QuadPart < 0) {
    CloseHandle(h);
    throw NotRegularFileError(name_, std::string("is ") + kind_of(type) + ", not a regular file");
  }
  handle_ = reinterpret_cast<std::intptr_t>(h);
  size_ = static_cast<std::uint64_t>(size.QuadPart);
}

InputFile::~InputFile() {
  if (handle_ != -1) CloseHandle(as_handle(handle_));
}

void InputFile::read_at(std::uint64_t offset, void* out, std::size_t count) const {
  auto* to = static_cast<unsigned char*>(out);
  while (count > 0) {
    const DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(count, std::numeric_limits<DWORD>::max() / 2));
    OVERLAPPED at{};
    at.Offset = static_cast<DWORD>(offset & 0xffffffffu);
    at.OffsetHigh = static_cast<DWORD>(offset >> 32);
    DWORD n = 0;
    if (!ReadFile(as_handle(handle_), to, chunk, &n, &at)) {
      const DWORD error = GetLastError();
      if (error == ERROR_HANDLE_EOF) throw InputError(name_, "the file became shorter while it was read");
      throw InputError(name_, "read error: Windows error " + std::to_string(error));
    }
    if (n == 0) throw InputError(name_, "the file became shorter while it was read");
    to += n;
    offset += n;
    count -= n;
  }
}

}  // namespace infer

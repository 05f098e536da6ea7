// write_file_atomically() on Windows: a temporary file beside the target (CREATE_NEW), FlushFileBuffers,
// then ReplaceFileW over an existing target, which keeps that file's security descriptor,
// attributes and creation time (a deployment may restrict who reads it), or MoveFileExW
// (MOVEFILE_WRITE_THROUGH) to a new one. A failure removes the temporary file: nothing is left
// half-written. Paths are wide throughout.
#include <windows.h>

#include <algorithm>
#include <string>

#include "infer/errors.h"
#include "platform/windows_message.h"
#include "manifest/writer.h"

namespace infer::manifest {
namespace {

namespace fs = std::filesystem;

// "Path not found (error 3)".
std::string windows_error(DWORD code) {
  std::string message = windows_message(code);
  while (!message.empty() && message.back() == '.') message.pop_back();
  return (message.empty() ? std::string("Windows error") : message) + " (error " + std::to_string(code) + ")";
}

// A new file in the target's folder, removed unless committed.
class TempFile {
 public:
  explicit TempFile(const fs::path& target) {
    for (int attempt = 0; attempt < 100 && handle_ == INVALID_HANDLE_VALUE; ++attempt) {
      name_ = target.parent_path() / (L"." + target.filename().wstring() + L".tmp-" +
                                      std::to_wstring(GetCurrentProcessId()) + L"-" + std::to_wstring(attempt));
      handle_ = CreateFileW(name_.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr);
      if (handle_ == INVALID_HANDLE_VALUE && GetLastError() != ERROR_FILE_EXISTS) break;
    }
    if (handle_ == INVALID_HANDLE_VALUE) error_ = GetLastError();
  }
  ~TempFile() {
    close();
    if (!committed_) DeleteFileW(name_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  bool ok() const { return handle_ != INVALID_HANDLE_VALUE; }
  DWORD error() const { return error_; }
  const fs::path& name() const { return name_; }
  void committed() { committed_ = true; }

  // Writes and flushes to the disk; false with error() set on failure.
  bool write(const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
      const DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(text.size() - done, 1u << 30));
      DWORD written = 0;
      if (!WriteFile(handle_, text.data() + done, chunk, &written, nullptr)) return fail();
      done += written;
    }
    if (!FlushFileBuffers(handle_)) return fail();
    return true;
  }
  // ReplaceFileW and MoveFileExW need the temporary file closed.
  void close() {
    if (handle_ != INVALID_HANDLE_VALUE) CloseHandle(handle_);
    handle_ = INVALID_HANDLE_VALUE;
  }

 private:
  bool fail() {
    error_ = GetLastError();
    return false;
  }
  HANDLE handle_ = INVALID_HANDLE_VALUE;
  fs::path name_;
  DWORD error_ = 0;
  bool committed_ = false;
};

}  // namespace

void write_file_atomically(const fs::path& path, const std::string& text) {
  const fs::path target = fs::absolute(path);
  const auto cannot = [&](const std::string& why) { return InputError(path.u8string(), "cannot write: " + why); };
  const DWORD attributes = GetFileAttributesW(target.c_str());
  const bool exists = attributes != INVALID_FILE_ATTRIBUTES;
  if (exists && (attributes & FILE_ATTRIBUTE_DIRECTORY)) throw cannot(target.u8string() + " is a directory");
  if (exists && (attributes & FILE_ATTRIBUTE_READONLY)) throw cannot(target.u8string() + " is read-only");
  TempFile tmp(target);
  if (!tmp.ok()) throw cannot(windows_error(tmp.error()));
  if (!tmp.write(text)) throw cannot(windows_error(tmp.error()));
  tmp.close();
  const BOOL moved =
      exists ? ReplaceFileW(target.c_str(), tmp.name().c_str(), nullptr, REPLACEFILE_IGNORE_MERGE_ERRORS, nullptr,
                            nullptr)
             : MoveFileExW(tmp.name().c_str(), target.c_str(), MOVEFILE_WRITE_THROUGH);
  if (!moved) throw cannot(windows_error(GetLastError()));
  tmp.committed();
}

}  // namespace infer::manifest

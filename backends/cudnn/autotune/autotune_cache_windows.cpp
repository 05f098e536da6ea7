// The autotune cache's file on Windows: CreateFileW/ReadFile bounded by the file's size, a
// temporary file flushed (FlushFileBuffers) and moved over the cache with MoveFileExW
// (MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH), %LOCALAPPDATA%\infer\autotune.json. Wide
// paths throughout.
#include <windows.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "backends/cudnn/autotune/autotune_cache.h"
#include "backends/cudnn/autotune/autotune_cache_file.h"
#include "platform/windows_message.h"

namespace infer::cudnn {

namespace fs = std::filesystem;

namespace detail {
namespace {

std::runtime_error failure(const std::string& what, DWORD error) {
  return std::runtime_error(what + windows_error_text(error));
}

// Closes the handle when the scope ends.
class Handle {
 public:
  explicit Handle(HANDLE h) : h_(h) {}
  ~Handle() {
    if (h_ != INVALID_HANDLE_VALUE) CloseHandle(h_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  HANDLE get() const { return h_; }
  bool close() { return CloseHandle(std::exchange(h_, INVALID_HANDLE_VALUE)) != 0; }

 private:
  HANDLE h_;
};

// A variable's value as a path (UTF-16 from the environment, never through the ANSI code page);
// empty when unset.
fs::path env_path(const wchar_t* name) {
  const DWORD n = GetEnvironmentVariableW(name, nullptr, 0);
  if (n == 0) return {};
  std::wstring value(n, L'\0');
  value.resize(GetEnvironmentVariableW(name, value.data(), n));
  return fs::path(value);
}

}  // namespace

const char* const kCacheLocationHint = "set INFER_AUTOTUNE_CACHE or LOCALAPPDATA";

std::optional<std::string> read_cache_file(const fs::path& path) {
  const DWORD attributes = GetFileAttributesW(path.c_str());
  if (attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY)) {
    throw std::runtime_error("is a folder, expected a file");
  }
  const Handle file(CreateFileW(path.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                                nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr));
  if (file.get() == INVALID_HANDLE_VALUE) {
    const DWORD error = GetLastError();
    if (error == ERROR_FILE_NOT_FOUND || error == ERROR_PATH_NOT_FOUND) return std::nullopt;
    throw failure("cannot read: ", error);
  }
  if (GetFileType(file.get()) != FILE_TYPE_DISK) throw std::runtime_error("cannot read: not a regular file");
  LARGE_INTEGER size{};
  if (!GetFileSizeEx(file.get(), &size)) throw failure("cannot read: ", GetLastError());
  if (static_cast<std::uint64_t>(size.QuadPart) > kAutotuneCacheMaxBytes) {
    throw std::runtime_error("too large: " + std::to_string(size.QuadPart) + " bytes, the limit is 16 MiB");
  }
  // Up to one byte past the limit: a file that grows meanwhile is still caught by parse().
  std::string text(kAutotuneCacheMaxBytes + 1, '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    DWORD n = 0;
    if (!ReadFile(file.get(), text.data() + done, static_cast<DWORD>(text.size() - done), &n, nullptr)) {
      throw failure("cannot read: ", GetLastError());
    }
    if (n == 0) break;
    done += n;
  }
  text.resize(done);
  return text;
}

void replace_cache_file(const fs::path& path, const std::string& text) {
  const fs::path dir = fs::absolute(path).parent_path();
  // Same folder as the target, so that the move replaces it in one step (same volume).
  std::mt19937_64 random(std::random_device{}());
  fs::path tmp;
  HANDLE created = INVALID_HANDLE_VALUE;
  DWORD error = ERROR_FILE_EXISTS;
  for (int attempt = 0; attempt < 100 && created == INVALID_HANDLE_VALUE && error == ERROR_FILE_EXISTS; ++attempt) {
    tmp = dir / (L"." + path.filename().wstring() + L".tmp-" + std::to_wstring(random() & 0xffffffffffULL));
    created = CreateFileW(tmp.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (created == INVALID_HANDLE_VALUE) error = GetLastError();
  }
  Handle file(created);
  if (file.get() == INVALID_HANDLE_VALUE) throw failure("cannot create a temporary file in " + dir.u8string() + ": ", error);
  error = 0;
  std::size_t done = 0;
  while (done < text.size() && error == 0) {
    DWORD n = 0;
    if (!WriteFile(file.get(), text.data() + done, static_cast<DWORD>(text.size() - done), &n, nullptr)) {
      error = GetLastError();
    }
    done += n;
  }
  if (error == 0 && !FlushFileBuffers(file.get())) error = GetLastError();
  if (!file.close() && error == 0) error = GetLastError();
  if (error == 0 && !MoveFileExW(tmp.c_str(), path.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
    error = GetLastError();
  }
  if (error != 0) {
    DeleteFileW(tmp.c_str());
    throw failure("cannot write: ", error);
  }
}

}  // namespace detail

fs::path default_autotune_cache_path() {
  if (fs::path p = detail::env_path(L"INFER_AUTOTUNE_CACHE"); !p.empty()) return p;
  if (fs::path p = detail::env_path(L"LOCALAPPDATA"); !p.empty() && p.is_absolute()) {
    return p / "infer" / "autotune.json";
  }
  return {};
}

}  // namespace infer::cudnn

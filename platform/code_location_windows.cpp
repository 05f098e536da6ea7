// Where the running code is on Windows: the module (.exe or .dll) whose image holds this function,
// and the process's .exe, by GetModuleFileNameW (wide paths, any length).
#include <windows.h>

#include "platform/install_layout.h"

namespace infer {
namespace {

namespace fs = std::filesystem;

fs::path module_file(HMODULE module) {
  std::wstring path(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = GetModuleFileNameW(module, path.data(), static_cast<DWORD>(path.size()));
    if (n == 0) return {};
    if (n < path.size()) {
      path.resize(n);
      return fs::path(path);
    }
    if (path.size() >= 32768) return {};  // the longest path Windows has
    path.resize(path.size() * 2);         // truncated: try a larger buffer
  }
}

}  // namespace

const char* const kExecutablePathSource = "GetModuleFileNameW";

fs::path executable_path() { return module_file(nullptr); }

fs::path path_from_environment(const char* name) {
  const std::wstring wide_name = fs::u8path(name).wstring();
  const DWORD n = GetEnvironmentVariableW(wide_name.c_str(), nullptr, 0);
  if (n <= 1) return {};  // unset (0) or empty (1: the terminating null alone)
  std::wstring value(n, L'\0');
  value.resize(GetEnvironmentVariableW(wide_name.c_str(), value.data(), n));
  return fs::path(value);
}

CodeLocation code_location() {
  HMODULE self = nullptr;
  const auto address = reinterpret_cast<LPCWSTR>(&code_location);
  if (GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT, address,
                         &self) &&
      self != GetModuleHandleW(nullptr)) {
    return {module_file(self), false};
  }
  return {executable_path(), true};
}

}  // namespace infer

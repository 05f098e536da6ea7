#include "platform/windows_message.h"

#include <windows.h>

#include <string>

namespace infer {

std::string windows_message(unsigned long code) {
  wchar_t* buf = nullptr;
  const DWORD n = FormatMessageW(
      FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0,
      reinterpret_cast<LPWSTR>(&buf), 0, nullptr);
  std::wstring w = n && buf ? std::wstring(buf, n) : L"";
  if (buf) LocalFree(buf);
  while (!w.empty() && (w.back() == L'\n' || w.back() == L'\r' || w.back() == L' ')) w.pop_back();
  return utf8_from_utf16(w);
}

std::string utf8_from_utf16(std::wstring_view text) {
  if (text.empty()) return {};
  const int units = static_cast<int>(text.size());
  std::string out(static_cast<std::size_t>(WideCharToMultiByte(CP_UTF8, 0, text.data(), units, nullptr, 0, nullptr, nullptr)),
                  '\0');
  WideCharToMultiByte(CP_UTF8, 0, text.data(), units, out.data(), static_cast<int>(out.size()), nullptr, nullptr);
  return out;
}

std::string windows_error_text(unsigned long code) {
  const std::string message = windows_message(code);
  return "error " + std::to_string(code) + (message.empty() ? "" : ": " + message);
}

}  // namespace infer

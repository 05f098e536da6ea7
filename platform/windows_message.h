// Text from Windows as UTF-8 (Windows only): its own message for a system error code
// (FormatMessageW), and any UTF-16 string it gives.
#pragma once

#include <string>
#include <string_view>

namespace infer {

// Without the trailing line break: "The specified module could not be found." for 126; "" when
// Windows has none.
std::string windows_message(unsigned long code);
// "error 126: The specified module could not be found." ("error 126" where Windows has no text).
std::string windows_error_text(unsigned long code);

// UTF-16 from Windows (a path, an argument, a variable) as UTF-8. An unpaired surrogate, which a
// file name may hold, becomes U+FFFD (std::filesystem's conversion would throw instead).
std::string utf8_from_utf16(std::wstring_view text);

}  // namespace infer

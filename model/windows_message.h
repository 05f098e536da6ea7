// Windows' own text for a system error code (FormatMessageW), UTF-8, without the trailing line
// break: "The specified module could not be found." for 126. "" when Windows has none. Windows only.
#pragma once

#include <string>

namespace infer {

std::string windows_message(unsigned long code);
// "error 126: The specified module could not be found." ("error 126" where Windows has no text).
std::string windows_error_text(unsigned long code);

}  // namespace infer

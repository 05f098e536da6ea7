// Text from outside the program (a decoder's message, what a foreign library returned) made safe
// for a one-line message and for JSON: control characters and bytes that are not valid UTF-8 are
// written as \xNN.
#pragma once

#include <string>
#include <string_view>

namespace infer {

// Printable ASCII kept, every other byte written as \xNN.
std::string printable_ascii(std::string_view text);
// Printable ASCII and well-formed UTF-8 sequences (RFC 3629) kept, every other byte written as \xNN;
// so are C1 control characters (U+0080 to U+009F), which some terminals obey. Backslashes are kept:
// the result is for reading, not for parsing back.
std::string printable_utf8(std::string_view text);
// Whether text is well-formed UTF-8 (RFC 3629).
bool is_utf8(std::string_view text);

}  // namespace infer

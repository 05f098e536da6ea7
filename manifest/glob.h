// Shell-style name patterns for the manifest's name items (system.os = "Debian*", gpu.name =
// ["NVIDIA H100*", "NVIDIA H200*"]), the same on every system: '*' any run of characters, '?' one
// character, "[a-z]" / "[!0-9]" one character of (or not of) a set, '\' makes the next character
// literal. Characters are bytes; case matters.
#pragma once

#include <string_view>

namespace infer::manifest {

bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace infer::manifest

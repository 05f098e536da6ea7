// `infer --version`: what the binary was built with and what it finds at run time.
#pragma once

#include <iosfwd>
#include <string>

namespace infer::app {

// The model is `model` (--model), or the shipped one when empty.
void print_version(std::ostream& out, const std::string& model);

}  // namespace infer::app

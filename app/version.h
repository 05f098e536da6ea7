// `infer --version`: what the binary was built with and what it finds at run time.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>

namespace infer::app {

// The model is `model` (--model), or the shipped one when empty. Each entry is one line, or with
// `width` (a terminal's columns; 0: none) wrapped to it at spaces, continuing under its text.
void print_version(std::ostream& out, const std::string& model, std::size_t width);

}  // namespace infer::app

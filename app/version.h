// `infer --version`: what the binary was built with and what it finds at run time.
#pragma once

#include <filesystem>
#include <iosfwd>

namespace infer::app {

void print_version(std::ostream& out, const std::filesystem::path& model_path);

}  // namespace infer::app

// The command line of `infer`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/image.h"

namespace infer::app {

enum class DeviceChoice { Auto, Gpu, Cpu };

struct Options {
  std::vector<std::string> inputs;  // image files and directories
  std::string model;                // empty: the shipped model
  DeviceChoice device = DeviceChoice::Auto;
  InvertMode invert = InvertMode::Auto;
  int top_k = 3;
  int batch = 64;
  bool json = false;
  bool version = false;
};

// Parses argv. Returns the options, or an exit code when parsing already finished the run
// (--help printed: 0; a usage error printed: kExitUsage).
struct ParseResult {
  Options options;
  std::optional<int> exit_code;
};
ParseResult parse_options(int argc, char** argv);

}  // namespace infer::app

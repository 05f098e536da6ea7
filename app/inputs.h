// The command line's image arguments, expanded: a directory stands for the images in it.
#pragma once

#include <string>
#include <vector>

namespace infer::app {

// One image to classify, or an argument that already failed (with its message).
struct Input {
  std::string path;
  std::string error;  // empty when the path is to be decoded
};

// Each argument in order; a directory becomes its entries with an image extension, sorted by name.
// A directory that cannot be listed or holds no image is an Input with an error.
std::vector<Input> expand_inputs(const std::vector<std::string>& args);

}  // namespace infer::app

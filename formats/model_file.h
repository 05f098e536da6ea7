// Loads a model: the architecture in TOML next to its tensors in safetensors, an ONNX file, or a
// TOML that names an ONNX file (`onnx = "..."`) and adds what ONNX does not say (labels, mean and
// std, preprocessing). The kind is recognised by the file's content (onnx_model.h), so an ONNX file
// never reaches the TOML parser. The formats are described in docs/model-format.md (with "ONNX
// models") and weights/README.md.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "graph/network.h"

namespace infer {

struct LoadedModel {
  Network network;
  std::filesystem::path toml_path;     // the file named (TOML or ONNX)
  std::filesystem::path weights_path;  // where the parameters came from: safetensors, or the ONNX file
};

// Reads and validates the TOML, then the weights it names (relative to the TOML's folder), and
// checks every tensor's dtype and shape against the architecture. Tensors the architecture does
// not use are an error too. Throws InputError naming the file (and the line and key, for TOML
// problems, or the layer with the expected and found shape).
LoadedModel load_model(const std::filesystem::path& toml_path);

// Called with the TOML path (after it is parsed) and the weights path (before it is read); throws to
// refuse the file. The hook for the manifest's SHA-256 check (app/ supplies it).
using FileCheck = std::function<void(const std::filesystem::path&)>;
LoadedModel load_model(const std::filesystem::path& toml_path, const FileCheck& check);

// Same as load_model, but with the weights file given explicitly.
LoadedModel load_model(const std::filesystem::path& toml_path, const std::filesystem::path& weights_path);

}  // namespace infer

// The tiny test model (TOML + safetensors) and the ways its files can be wrong, shared by the
// library-level tests (test_model_file.cpp) and the end-to-end bad-input suite (test_bad_inputs.cpp).
#pragma once

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace infer::test {

// A small valid model: 1x4x4 -> conv(2, 3x3, pad 1) -> relu -> flatten -> linear(3) -> softmax.
inline const char* kTinyToml = R"(format = "infer-model"
format_version = 1
name = "tiny"
weights = "tiny.safetensors"

[input]
channels = 1
height = 4
width = 4
mean = [0.5]
std = [0.25]
labels = ["a", "b", "c"]

[[layers]]
name = "conv"
type = "conv2d"
out_channels = 2
kernel = [3, 3]
padding = [1, 1]

[[layers]]
name = "relu"
type = "relu"

[[layers]]
name = "flat"
type = "flatten"

[[layers]]
name = "fc"
type = "linear"
out_features = 3

[[layers]]
name = "prob"
type = "softmax"
)";

struct Tensor {
  std::string name, dtype;
  std::vector<long long> shape;
  std::string bytes;
};

inline Tensor f32(const std::string& name, std::vector<long long> shape, Random& rng) {
  std::size_t n = 1;
  for (long long d : shape) n *= static_cast<std::size_t>(d);
  const std::vector<float> v = rng.vector(n);
  std::string bytes(n * 4, '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // this machine is little-endian, as the format
  return {name, "F32", std::move(shape), bytes};
}

// Serialises tensors back to back; `edit` may change the header before it is written.
inline std::string safetensors_bytes(const std::vector<Tensor>& tensors,
                              const std::function<void(nlohmann::json&)>& edit = nullptr) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const Tensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  if (edit) edit(header);
  const std::string h = header.dump();
  std::string out(8, '\0');
  const std::uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(len >> (8 * i) & 0xff);
  return out + h + data;
}

inline std::vector<Tensor> tiny_tensors(Random& rng) {
  return {f32("conv.weight", {2, 1, 3, 3}, rng), f32("conv.bias", {2}, rng), f32("fc.weight", {3, 32}, rng),
          f32("fc.bias", {3}, rng)};
}

struct TomlCase {
  const char* what;
  std::string from, to;  // text replaced in kTinyToml
  std::string message;   // substring of the error
};

inline void PrintTo(const TomlCase& c, std::ostream* os) { *os << c.what; }

// kTinyToml with the case's edit made; an empty string (and a test failure) if `from` is absent.
inline std::string edited_toml(const TomlCase& c) {
  std::string toml = kTinyToml;
  const std::size_t at = toml.find(c.from);
  if (at == std::string::npos) {
    ADD_FAILURE() << "the text to replace is not in kTinyToml: " << c.from;
    return "";
  }
  return toml.replace(at, c.from.size(), c.to);
}

// kTinyToml edits that make the model invalid.
inline std::vector<TomlCase> toml_cases() {
  return {TomlCase{"bad TOML", "channels = 1", "channels = = 1", "line 7: invalid TOML"},
        TomlCase{"unknown layer type", "type = \"relu\"", "type = \"gelu\"", "unknown layer type 'gelu'"},
        TomlCase{"unknown key", "padding = [1, 1]", "padding = [1, 1]\npading = 2", "line 20: layer 'conv': unknown key 'pading'"},
        TomlCase{"missing attribute", "out_features = 3", "", "layer 'fc': missing key 'out_features'"},
        TomlCase{"zero size", "out_channels = 2", "out_channels = 0", "key 'out_channels' = 0 is out of range"},
        TomlCase{"negative size", "kernel = [3, 3]", "kernel = [3, -3]", "key 'kernel' has -3, out of range"},
        TomlCase{"wrong type", "out_features = 3", "out_features = \"3\"", "key 'out_features' must be an integer"},
        TomlCase{"shapes do not chain", "name = \"flat\"\ntype = \"flatten\"", "name = \"flat\"\ntype = \"relu\"",
                 "layer 'fc' (linear): needs a flat input"},
        TomlCase{"strided window too large", "kernel = [3, 3]\npadding = [1, 1]", "kernel = [5, 5]\nstride = 2",
                 "a 5x5 window does not fit the input 1x4x4"},  // was accepted as 1x1 (truncating division)
        TomlCase{"flattened size over int", "height = 4\nwidth = 4", "height = 1000000\nwidth = 1000000",
                 "has 2000000000000 values, more than 2147483647"},
        TomlCase{"window too large", "padding = [1, 1]", "padding = [0, 0]\ndilation = 3",
                 "does not fit the input 1x4x4"},
        TomlCase{"labels do not match", "\"a\", \"b\", \"c\"", "\"a\", \"b\"", "has 2 labels but its output has 3"},
        TomlCase{"duplicate names", "name = \"relu\"", "name = \"conv\"", "two layers are named 'conv'"},
        TomlCase{"unsupported version", "format_version = 1", "format_version = 2", "format_version 2 is not supported"},
        TomlCase{"mean per channel", "mean = [0.5]", "mean = [0.5, 0.5]", "one value per channel"}};
}

struct WeightsCase {
  const char* what;
  std::function<std::string(std::vector<Tensor>)> make;
  std::string message;
};

inline void PrintTo(const WeightsCase& c, std::ostream* os) { *os << c.what; }

// Weights files for kTinyToml that are invalid.
inline std::vector<WeightsCase> weights_cases() {
  return {WeightsCase{"empty", [](auto) { return std::string(); }, "need at least 8"},
        WeightsCase{"header longer than file",
                    [](auto ts) { std::string b = safetensors_bytes(ts); b[0] = '\xff'; b[1] = '\x0f'; return b; },
                    "safetensors header claims 4095 bytes but the file has only"},
        WeightsCase{"header not JSON",
                    [](auto ts) { std::string b = safetensors_bytes(ts); b[8] = '#'; return b; }, "not valid JSON"},
        WeightsCase{"offset out of range",
                    [](auto ts) {
                      return safetensors_bytes(ts, [](nlohmann::json& h) { h["fc.bias"]["data_offsets"] = {536, 548}; });
                    },
                    "tensor 'fc.bias': data_offsets [536, 548] are outside the data section of 476 bytes"},
        WeightsCase{"overlapping tensors",
                    [](auto ts) {
                      return safetensors_bytes(ts, [](nlohmann::json& h) { h["conv.bias"]["data_offsets"] = {4, 12}; });
                    },
                    "two tensors overlap"},
        WeightsCase{"size does not match shape",
                    [](auto ts) {
                      return safetensors_bytes(ts, [](nlohmann::json& h) { h["fc.bias"]["shape"] = {4}; });
                    },
                    "shape and dtype need 16 bytes but data_offsets span 12"},
        WeightsCase{"wrong dtype",
                    [](std::vector<Tensor> ts) {
                      ts[3].dtype = "I32";
                      return safetensors_bytes(ts);
                    },
                    "tensor 'fc.bias' has dtype I32, expected F32"},
        WeightsCase{"unknown dtype",
                    [](std::vector<Tensor> ts) {
                      ts[3].dtype = "F31";
                      return safetensors_bytes(ts);
                    },
                    "unknown dtype 'F31'"},
        WeightsCase{"huge declared shape",
                    [](auto ts) {
                      return safetensors_bytes(ts, [](nlohmann::json& h) {
                        h["fc.bias"]["shape"] = {1ull << 40, 1ull << 40, 1ull << 40};
                      });
                    },
                    "declared size overflows"},
        WeightsCase{"shape value over int64 next to a zero",  // was read back as a negative dim
                    [](auto ts) {
                      return safetensors_bytes(ts, [](nlohmann::json& h) {
                        h["fc.extra"] = {{"dtype", "F32"}, {"shape", {0ull, 1ull << 63}}, {"data_offsets", {0, 0}}};
                      });
                    },
                    "shape value 9223372036854775808 is too large"},
        WeightsCase{"tensor missing",
                    [](std::vector<Tensor> ts) {
                      ts.pop_back();
                      return safetensors_bytes(ts);
                    },
                    "layer 'fc': tensor 'fc.bias' is missing (expected shape [3])"},
        WeightsCase{"tensor extra",
                    [](std::vector<Tensor> ts) {
                      Random rng;
                      ts.push_back(f32("fc2.weight", {2}, rng));
                      return safetensors_bytes(ts);
                    },
                    "tensor 'fc2.weight' is not used by any layer"},
        WeightsCase{"wrong shape",
                    [](std::vector<Tensor> ts) {
                      ts[2].shape = {32, 3};
                      return safetensors_bytes(ts);
                    },
                    "layer 'fc': tensor 'fc.weight' has shape [32, 3], expected [3, 32]"}};
}

}  // namespace infer::test

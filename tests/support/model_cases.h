// The tiny test model (TOML + safetensors) and the ways its files can be wrong, shared by the
// library-level tests (test_model_file.cpp) and the end-to-end bad-input suite (test_bad_inputs.cpp).
// tests/fuzz/make_corpus.py reads kTinyToml and the f32() calls of tiny_tensors() from this file for
// the fuzz seeds (it stops, naming what it missed, if their form changes).
#pragma once

#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

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
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  if (edit) edit(header);
  const std::string h = header.dump();
  std::string out(8, '\0');
  const std::uint64_t len = h.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(len >> (8 * i) & 0xff);
  return out + h + data;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// `tensors` with element `index` (flat) of the tensor `name` set to `value`; the others keep their data.
inline std::vector<Tensor> with_value_tensors(std::vector<Tensor> tensors, const std::string& name, std::size_t index,
                                              float value) {
  for (Tensor& t : tensors) {
    if (t.name == name) std::memcpy(t.bytes.data() + 4 * index, &value, 4);
  }
  return tensors;
}

// The same, serialised.
inline std::string with_value(const std::vector<Tensor>& tensors, const std::string& name, std::size_t index,
                              float value) {
  return safetensors_bytes(with_value_tensors(tensors, name, index, value));
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
  return {
      TomlCase{"bad TOML", "channels = 1", "channels = = 1", "line 7: invalid TOML"},
      TomlCase{"unknown layer type", "type = \"relu\"", "type = \"no_such_op\"", "unknown layer type 'no_such_op'"},
      TomlCase{"unknown key", "padding = [1, 1]", "padding = [1, 1]\npading = 2",
               "line 20: layer 'conv': unknown key 'pading'"},
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
      TomlCase{"unsupported version", "format_version = 1", "format_version = 3",
               "format_version 3 is not supported (this build reads 1 to 2)"},
      TomlCase{"version 0", "format_version = 1", "format_version = 0", "format_version 0 is not supported"},
      TomlCase{"inputs in version 1", "name = \"relu\"\ntype = \"relu\"",
               "name = \"relu\"\ntype = \"relu\"\ninputs = [\"conv\"]",
               "layer 'relu': key 'inputs' needs format_version = 2"},
      TomlCase{"graph op in version 1", "type = \"relu\"", "type = \"sigmoid\"",
               "layer type 'sigmoid' needs format_version = 2"},
      TomlCase{"dropout in version 1", "type = \"relu\"", "type = \"dropout\"",
               "layer type 'dropout' needs format_version = 2"},
      TomlCase{"mean per channel", "mean = [0.5]", "mean = [0.5, 0.5]", "one value per channel"},
      TomlCase{"unknown resize mode", "std = [0.25]", "std = [0.25]\nresize = \"zoom\"",
               "line 12: [input]: key 'resize' must be one of \"trim_fit\", \"stretch\", \"crop\""},
      TomlCase{"crop smaller than the input", "std = [0.25]", "std = [0.25]\nresize_size = 3",
               "resize_size 3 is smaller than the input, which is cropped from it (4x4)"},
      TomlCase{"resize_size without crop", "std = [0.25]", "std = [0.25]\nresize = \"stretch\"\nresize_size = 8",
               "resize_size needs resize = \"crop\""},
      TomlCase{"unknown channel order", "std = [0.25]", "std = [0.25]\nchannel_order = \"grb\"",
               "key 'channel_order' must be one of \"rgb\", \"bgr\""},
      // Issue 11, item 10: values the preprocessing cannot compute with (the output was "prob": null).
      TomlCase{"NaN mean", "mean = [0.5]", "mean = [nan]", "line 10: [input]: key 'mean' has NaN at index 0"},
      TomlCase{"infinite std", "std = [0.25]", "std = [0.25, inf]", "line 11: [input]: key 'std' has +Inf at index 1"},
      TomlCase{"mean beyond float32", "mean = [0.5]", "mean = [-1e39]", "key 'mean' has -1e+39 at index 0"},
      TomlCase{"zero std", "std = [0.25]", "std = [0.0]",
               "input std of channel 0 must be a positive finite number, found 0"},
      TomlCase{"negative std", "std = [0.25]", "std = [-0.25]",
               "input std of channel 0 must be a positive finite number, found -0.25"},
      TomlCase{"std too small", "std = [0.25]", "std = [1e-39]",
               "input channel 0: (pixel - mean) / std reaches 5e+38 for pixels in [0, 1]"}};
}

struct WeightsCase {
  const char* what;
  std::function<std::string(std::vector<Tensor>)> make;
  std::string message;
};

inline void PrintTo(const WeightsCase& c, std::ostream* os) { *os << c.what; }

// Weights files for kTinyToml that are invalid.
inline std::vector<WeightsCase> weights_cases() {
  return {
      WeightsCase{"empty", [](auto) { return std::string(); }, "need at least 8"},
      WeightsCase{"header longer than file",
                  [](auto ts) {
                    std::string b = safetensors_bytes(ts);
                    b[0] = '\xff';
                    b[1] = '\x0f';
                    return b;
                  },
                  "safetensors header claims 4095 bytes but the file has only"},
      WeightsCase{"header not JSON",
                  [](auto ts) {
                    std::string b = safetensors_bytes(ts);
                    b[8] = '#';
                    return b;
                  },
                  "not valid JSON"},
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
                  [](auto ts) { return safetensors_bytes(ts, [](nlohmann::json& h) { h["fc.bias"]["shape"] = {4}; }); },
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
                  "layer 'fc': tensor 'fc.weight' has shape [32, 3], expected [3, 32]"},
      // Issue 11, item 10: non-finite parameters, named with their flat and multi-dimensional index.
      WeightsCase{"NaN in a convolution weight",
                  [](std::vector<Tensor> ts) { return with_value(ts, "conv.weight", 17, kNaN); },
                  "layer 'conv': tensor 'conv.weight' has NaN at index 17 ([1, 0, 2, 2])"},
      WeightsCase{"infinity in a linear weight",
                  [](std::vector<Tensor> ts) { return with_value(ts, "fc.weight", 70, kInf); },
                  "layer 'fc': tensor 'fc.weight' has +Inf at index 70 ([2, 6])"},
      WeightsCase{"negative infinity in a bias",
                  [](std::vector<Tensor> ts) { return with_value(ts, "fc.bias", 2, -kInf); },
                  "layer 'fc': tensor 'fc.bias' has -Inf at index 2 ([2])"}};
}

// A small valid model with a batch-norm: 1x4x4 -> conv(2, 3x3, pad 1) -> batchnorm -> relu ->
// flatten -> linear(3) -> softmax. Its weights: batchnorm_tensors().
inline const char* kBatchNormToml = R"(format = "infer-model"
format_version = 1
name = "tiny-bn"
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
name = "bn"
type = "batchnorm"

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

// Fresh random tensors for kBatchNormToml; running variances are positive, as trained ones are.
inline std::vector<Tensor> batchnorm_tensors(Random& rng) {
  std::vector<Tensor> ts = tiny_tensors(rng);
  for (const char* name : {"bn.weight", "bn.bias", "bn.running_mean"}) ts.push_back(f32(name, {2}, rng));
  Tensor var = f32("bn.running_var", {2}, rng);
  for (std::size_t i = 0; i < 2; ++i) {
    const float v = rng.uniform(0.2f, 2.0f);
    std::memcpy(var.bytes.data() + 4 * i, &v, 4);
  }
  ts.push_back(var);
  return ts;
}

// Weights files for kBatchNormToml whose values no backend can compute with (issue 11, item 10).
inline std::vector<WeightsCase> batchnorm_cases() {
  return {
      WeightsCase{"negative running variance",
                  [](std::vector<Tensor> ts) { return with_value(ts, "bn.running_var", 1, -0.5f); },
                  "layer 'bn': tensor 'bn.running_var' has -0.5 at index 1 ([1]); a variance cannot be negative"},
      WeightsCase{"NaN running variance",
                  [](std::vector<Tensor> ts) { return with_value(ts, "bn.running_var", 0, kNaN); },
                  "layer 'bn': tensor 'bn.running_var' has NaN at index 0 ([0])"},
      WeightsCase{"infinite running mean",
                  [](std::vector<Tensor> ts) { return with_value(ts, "bn.running_mean", 1, kInf); },
                  "layer 'bn': tensor 'bn.running_mean' has +Inf at index 1 ([1])"},
      WeightsCase{"NaN batch-norm scale", [](std::vector<Tensor> ts) { return with_value(ts, "bn.weight", 1, kNaN); },
                  "layer 'bn': tensor 'bn.weight' has NaN at index 1 ([1])"},
      WeightsCase{
          "batch-norm scale beyond float32",  // 3e38 / sqrt(0 + 1e-5) ~ 9.5e40
          [](std::vector<Tensor> ts) {
            return with_value(with_value_tensors(ts, "bn.running_var", 0, 0.0f), "bn.weight", 0, 3e38f);
          },
          "layer 'bn': channel 0: weight / sqrt(running_var + epsilon) overflows float32 (weight 3e+38, bias "}};
}

}  // namespace infer::test

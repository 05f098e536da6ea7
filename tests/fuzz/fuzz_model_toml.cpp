// The model TOML reader with shape validation: the input is the TOML text; the weights are a fixed,
// valid safetensors file (the tiny model of tests/formats/test_model_file.cpp: conv 2x1x3x3 + bias, linear
// 3x32 + bias), passed explicitly so every input is checked against the same tensors. A model that
// loads is also run once on the CPU backend when its activations are small, so layer attributes the
// loader accepts are exercised by the ops too.
// Invariants: loading fails only with InputError; a loaded network's shapes chain; outputs are finite.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "backends/cpu/cpu_backend.h"
#include "infer/errors.h"
#include "formats/model_file.h"

namespace {

void put_tensor(std::string& header, std::string& data, const char* name, const std::string& shape, std::size_t n) {
  header += std::string(header.size() > 1 ? "," : "") + "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":" + shape +
            ",\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + 4 * n) + "]}";
  for (std::size_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i % 7) * 0.25f - 0.75f;
    char bytes[4];
    std::memcpy(bytes, &v, 4);  // little-endian host, as the format
    data.append(bytes, 4);
  }
}

std::filesystem::path weights_file() {
  static const std::filesystem::path path = [] {
    std::string header = "{", data;
    put_tensor(header, data, "conv.weight", "[2,1,3,3]", 18);
    put_tensor(header, data, "conv.bias", "[2]", 2);
    put_tensor(header, data, "fc.weight", "[3,32]", 96);
    put_tensor(header, data, "fc.bias", "[3]", 3);
    header += "}";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>(header.size() >> (8 * i) & 0xff);
    bytes += header + data;
    return infer::fuzz::write_input("tiny.safetensors", reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                    bytes.size());
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path weights = weights_file();
  const std::filesystem::path toml = infer::fuzz::write_input("model.toml", data, size);
  std::unique_ptr<infer::LoadedModel> model;
  try {
    model = std::make_unique<infer::LoadedModel>(infer::load_model(toml, weights));
  } catch (const infer::InputError&) {
    return 0;
  }
  const infer::Network& net = model->network;
  infer::Dims cur = net.input().dims;
  std::size_t largest = cur.size();
  for (const infer::Layer& layer : net.layers()) {
    FUZZ_CHECK(layer.in == cur && layer.out.c > 0 && layer.out.h > 0 && layer.out.w > 0);
    cur = layer.out;
    largest = std::max(largest, cur.size());
  }
  if (largest > (1u << 16)) return 0;  // valid, but too large to run at fuzzing speed
  const auto backend = infer::make_cpu_backend(net, 1);
  std::vector<float> input(net.input().dims.size(), 0.5f), output(net.output_dims().size());
  backend->forward(input.data(), 1, output.data());
  // Finite weights and input give finite outputs, unless a pad layer's value is an infinity (a -inf
  // border before a max pooling is legal; a window that sees only the border, or a convolution
  // reading it, yields an infinity or NaN, as ONNX Runtime does).
  const bool infinite_pad = std::any_of(net.layers().begin(), net.layers().end(), [](const infer::Layer& l) {
    return l.kind == infer::LayerKind::Pad && std::isinf(l.pad().value);
  });
  if (infinite_pad) return 0;
  for (float v : output) FUZZ_CHECK(std::isfinite(v));
  return 0;
}

// The model file readers: TOML architecture + safetensors weights, including every way a file
// can be wrong. Each bad file must give one InputError naming the file and the problem.
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "model/model_file.h"
#include "model/safetensors.h"
#include "process.h"
#include "test_util.h"

namespace infer::test {
namespace {

// A small valid model: 1x4x4 -> conv(2, 3x3, pad 1) -> relu -> flatten -> linear(3) -> softmax.
const char* kTinyToml = R"(format = "infer-model"
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

Tensor f32(const std::string& name, std::vector<long long> shape, Random& rng) {
  std::size_t n = 1;
  for (long long d : shape) n *= static_cast<std::size_t>(d);
  const std::vector<float> v = rng.vector(n);
  std::string bytes(n * 4, '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // this machine is little-endian, as the format
  return {name, "F32", std::move(shape), bytes};
}

// Serialises tensors back to back; `edit` may change the header before it is written.
std::string safetensors_bytes(const std::vector<Tensor>& tensors,
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

std::vector<Tensor> tiny_tensors(Random& rng) {
  return {f32("conv.weight", {2, 1, 3, 3}, rng), f32("conv.bias", {2}, rng), f32("fc.weight", {3, 32}, rng),
          f32("fc.bias", {3}, rng)};
}

class ModelFileTest : public ::testing::Test {
 protected:
  void write_model(const std::string& toml, const std::string& weights) {
    write_file(dir_ / "tiny.toml", toml);
    write_file(dir_ / "tiny.safetensors", weights);
  }
  // Loads the model and returns the error message; fails the test if loading succeeds.
  std::string load_error() {
    try {
      load_model(dir_ / "tiny.toml");
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "the model loaded but should have been refused";
    return "";
  }
  std::string toml_path() const { return (dir_ / "tiny.toml").string(); }
  std::string weights_path() const { return (dir_ / "tiny.safetensors").string(); }

  Random rng_;
  TempDir dir_;
};

TEST_F(ModelFileTest, ValidModelLoadsWithShapesAndValues) {
  SCOPED_TRACE(rng_.trace());
  const std::vector<Tensor> tensors = tiny_tensors(rng_);
  write_model(kTinyToml, safetensors_bytes(tensors));
  const LoadedModel m = load_model(dir_ / "tiny.toml");
  const Network& net = m.network;
  EXPECT_EQ(net.name(), "tiny");
  ASSERT_EQ(net.layers().size(), 5u);
  EXPECT_EQ(net.layers()[0].out, (Dims{2, 4, 4}));
  EXPECT_EQ(net.layers()[2].out, (Dims{32, 1, 1}));
  EXPECT_EQ(net.output_dims(), (Dims{3, 1, 1}));
  EXPECT_EQ(net.input().labels, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FLOAT_EQ(net.input().std[0], 0.25f);
  ASSERT_EQ(net.layers()[3].params.weight.size(), 96u);
  EXPECT_EQ(std::memcmp(net.layers()[3].params.weight.data(), tensors[2].bytes.data(), 96 * 4), 0);
  EXPECT_EQ(m.weights_path, dir_ / "tiny.safetensors");
}

TEST_F(ModelFileTest, TheShippedModelLoads) {
  const LoadedModel m = load_model(std::string(INFER_SOURCE_DIR) + "/weights/fashion.toml");
  EXPECT_EQ(m.network.input().dims, (Dims{1, 28, 28}));
  EXPECT_EQ(m.network.output_dims(), (Dims{10, 1, 1}));
  EXPECT_EQ(m.network.input().labels.size(), 10u);
  EXPECT_EQ(m.network.layers().back().kind, LayerKind::Softmax);
}

struct TomlCase {
  const char* what;
  std::string from, to;  // text replaced in kTinyToml
  std::string message;   // substring of the error
};

void PrintTo(const TomlCase& c, std::ostream* os) { *os << c.what; }

class TomlErrorTest : public ModelFileTest, public ::testing::WithParamInterface<TomlCase> {};

TEST_P(TomlErrorTest, NamesFileLineAndProblem) {
  const TomlCase& c = GetParam();
  std::string toml = kTinyToml;
  const std::size_t at = toml.find(c.from);
  ASSERT_NE(at, std::string::npos) << c.from;
  toml.replace(at, c.from.size(), c.to);
  write_model(toml, safetensors_bytes(tiny_tensors(rng_)));
  const std::string error = load_error();
  EXPECT_NE(error.find(toml_path()), std::string::npos) << error;
  EXPECT_NE(error.find(c.message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TomlErrorTest,
    ::testing::Values(
        TomlCase{"bad TOML", "channels = 1", "channels = = 1", "line 7: invalid TOML"},
        TomlCase{"unknown layer type", "type = \"relu\"", "type = \"gelu\"", "unknown layer type 'gelu'"},
        TomlCase{"unknown key", "padding = [1, 1]", "padding = [1, 1]\npading = 2", "line 20: layer 'conv': unknown key 'pading'"},
        TomlCase{"missing attribute", "out_features = 3", "", "layer 'fc': missing key 'out_features'"},
        TomlCase{"zero size", "out_channels = 2", "out_channels = 0", "key 'out_channels' = 0 is out of range"},
        TomlCase{"negative size", "kernel = [3, 3]", "kernel = [3, -3]", "key 'kernel' has -3, out of range"},
        TomlCase{"wrong type", "out_features = 3", "out_features = \"3\"", "key 'out_features' must be an integer"},
        TomlCase{"shapes do not chain", "name = \"flat\"\ntype = \"flatten\"", "name = \"flat\"\ntype = \"relu\"",
                 "layer 'fc' (linear): needs a flat input"},
        TomlCase{"window too large", "padding = [1, 1]", "padding = [0, 0]\ndilation = 3",
                 "does not fit the input 1x4x4"},
        TomlCase{"labels do not match", "\"a\", \"b\", \"c\"", "\"a\", \"b\"", "has 2 labels but its output has 3"},
        TomlCase{"duplicate names", "name = \"relu\"", "name = \"conv\"", "two layers are named 'conv'"},
        TomlCase{"unsupported version", "format_version = 1", "format_version = 2", "format_version 2 is not supported"},
        TomlCase{"mean per channel", "mean = [0.5]", "mean = [0.5, 0.5]", "one value per channel"}),
    CaseName());

TEST_F(ModelFileTest, MissingModelFile) {
  EXPECT_NE(load_error().find("tiny.toml: model file not found"), std::string::npos);
}

struct WeightsCase {
  const char* what;
  std::function<std::string(std::vector<Tensor>)> make;
  std::string message;
};

void PrintTo(const WeightsCase& c, std::ostream* os) { *os << c.what; }

class WeightsErrorTest : public ModelFileTest, public ::testing::WithParamInterface<WeightsCase> {};

TEST_P(WeightsErrorTest, NamesFileAndProblem) {
  const WeightsCase& c = GetParam();
  write_model(kTinyToml, c.make(tiny_tensors(rng_)));
  const std::string error = load_error();
  EXPECT_NE(error.find(weights_path()), std::string::npos) << error;
  EXPECT_NE(error.find(c.message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WeightsErrorTest,
    ::testing::Values(
        WeightsCase{"empty", [](auto) { return std::string(); }, "need at least 8"},
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
                    "layer 'fc': tensor 'fc.weight' has shape [32, 3], expected [3, 32]"}),
    CaseName());

TEST(Network, ValidatesParameterSizesInCode) {
  Random rng;
  Network ok = random_network(rng, {3, 5, 5}, {conv_layer("c", 4, 3)});
  Layer bad = ok.layers()[0];
  bad.params.weight.pop_back();
  try {
    Network("n", ok.input(), {bad});
    FAIL() << "accepted a short weight";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'c' (conv2d): c.weight needs [4, 3, 3, 3] = 108 values, found 107"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace infer::test

// The model file readers: TOML architecture + safetensors weights, including every way a file
// can be wrong. Each bad file must give one InputError naming the file and the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "graph/model_error.h"
#include "formats/model_file.h"
#include "formats/safetensors.h"
#include "tests/support/model_cases.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

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
  const LoadedModel m = load_model(test_file("weights/fashion.toml"));
  EXPECT_EQ(m.network.input().dims, (Dims{1, 28, 28}));
  EXPECT_EQ(m.network.output_dims(), (Dims{10, 1, 1}));
  EXPECT_EQ(m.network.input().labels.size(), 10u);
  EXPECT_EQ(m.network.layers().back().kind, LayerKind::Softmax);
}

class TomlErrorTest : public ModelFileTest, public ::testing::WithParamInterface<TomlCase> {};

TEST_P(TomlErrorTest, NamesFileLineAndProblem) {
  const TomlCase& c = GetParam();
  write_model(edited_toml(c), safetensors_bytes(tiny_tensors(rng_)));
  const std::string error = load_error();
  EXPECT_NE(error.find(toml_path()), std::string::npos) << error;
  EXPECT_NE(error.find(c.message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(Cases, TomlErrorTest, ::testing::ValuesIn(toml_cases()), CaseName());

TEST_F(ModelFileTest, MissingModelFile) { EXPECT_NE(load_error().find("tiny.toml: no such file"), std::string::npos); }

class WeightsErrorTest : public ModelFileTest, public ::testing::WithParamInterface<WeightsCase> {};

TEST_P(WeightsErrorTest, NamesFileAndProblem) {
  const WeightsCase& c = GetParam();
  write_model(kTinyToml, c.make(tiny_tensors(rng_)));
  const std::string error = load_error();
  EXPECT_NE(error.find(weights_path()), std::string::npos) << error;
  EXPECT_NE(error.find(c.message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(Cases, WeightsErrorTest, ::testing::ValuesIn(weights_cases()), CaseName());

class BatchNormWeightsErrorTest : public ModelFileTest, public ::testing::WithParamInterface<WeightsCase> {};

TEST_P(BatchNormWeightsErrorTest, NamesFileAndProblem) {
  SCOPED_TRACE(rng_.trace());
  const WeightsCase& c = GetParam();
  write_model(kBatchNormToml, c.make(batchnorm_tensors(rng_)));
  const std::string error = load_error();
  EXPECT_NE(error.find(weights_path()), std::string::npos) << error;
  EXPECT_NE(error.find(c.message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(Cases, BatchNormWeightsErrorTest, ::testing::ValuesIn(batchnorm_cases()), CaseName());

// The baseline the cases above break; a zero running variance is fine (epsilon keeps the division
// finite), and so is a negative zero.
TEST_F(ModelFileTest, BatchNormModelLoadsWithAZeroRunningVariance) {
  SCOPED_TRACE(rng_.trace());
  write_model(kBatchNormToml,
              safetensors_bytes(with_value_tensors(
                  with_value_tensors(batchnorm_tensors(rng_), "bn.running_var", 0, 0.0f), "bn.running_var", 1, -0.0f)));
  const LoadedModel m = load_model(dir_ / "tiny.toml");
  ASSERT_EQ(m.network.layers().size(), 6u);
  EXPECT_EQ(m.network.layers()[1].params.running_var[0], 0.0f);
}

// epsilon = inf made every scale 0 and was accepted; NaN and non-positive values were refused.
TEST_F(ModelFileTest, BatchNormEpsilonMustBePositiveAndFinite) {
  for (const char* value : {"inf", "nan", "0.0", "-1e-5", "-inf"}) {
    SCOPED_TRACE(value);
    std::string toml = kBatchNormToml;
    toml.replace(toml.find("type = \"batchnorm\""), 18, "type = \"batchnorm\"\nepsilon = " + std::string(value));
    write_model(toml, safetensors_bytes(batchnorm_tensors(rng_)));
    const std::string error = load_error();
    EXPECT_NE(error.find(toml_path() + ": line 24: layer 'bn': epsilon must be a positive finite number, found "),
              std::string::npos)
        << error;
  }
}

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

// Networks built in code (tests, benchmarks) get the same value checks as loaded ones: a ModelError
// naming the layer, the tensor and the first bad index.
TEST(Network, RefusesParameterValuesNoBackendCanComputeWith) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network ok = random_network(rng, {3, 5, 5}, {conv_layer("c", 4, 3), batchnorm_layer("bn")});
  struct Case {
    const char* what;
    std::size_t layer;
    std::vector<float> LayerParams::*field;
    std::size_t index;
    float value;
    std::string message;
  };
  const std::vector<Case> cases{
      {"NaN weight", 0, &LayerParams::weight, 40, kNaN,
       "layer 'c' (conv2d): tensor 'c.weight' has NaN at index 40 ([1, 1, 1, 1])"},
      {"infinite bias", 0, &LayerParams::bias, 3, -kInf,
       "layer 'c' (conv2d): tensor 'c.bias' has -Inf at index 3 ([3])"},
      {"negative variance", 1, &LayerParams::running_var, 2, -1e-3f,
       "layer 'bn' (batchnorm): tensor 'bn.running_var' has -0.001 at index 2 ([2]); a variance cannot be negative"},
      {"NaN mean", 1, &LayerParams::running_mean, 0, kNaN, "tensor 'bn.running_mean' has NaN at index 0 ([0])"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<Layer> layers = ok.layers();
    (layers[c.layer].params.*c.field)[c.index] = c.value;
    try {
      Network("n", ok.input(), layers);
      ADD_FAILURE() << "accepted";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  InputSpec nan_mean = ok.input();
  nan_mean.mean[1] = kNaN;
  EXPECT_THROW(Network("n", nan_mean, ok.layers()), ModelError);
  InputSpec inf_std = ok.input();
  inf_std.std[2] = kInf;
  EXPECT_THROW(Network("n", inf_std, ok.layers()), ModelError);
  std::vector<Layer> inf_epsilon = ok.layers();
  inf_epsilon[1].attrs = BatchNormAttrs{std::numeric_limits<double>::infinity()};
  EXPECT_THROW(Network("n", ok.input(), inf_epsilon), ModelError);
}

}  // namespace
}  // namespace infer::test

// The model file readers: TOML architecture + safetensors weights, including every way a file
// can be wrong. Each bad file must give one InputError naming the file and the problem.
#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "model/errors.h"
#include "model/model_file.h"
#include "model/safetensors.h"
#include "model_cases.h"
#include "process.h"
#include "test_util.h"

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

TEST_F(ModelFileTest, MissingModelFile) {
  EXPECT_NE(load_error().find("tiny.toml: model file not found"), std::string::npos);
}

class WeightsErrorTest : public ModelFileTest, public ::testing::WithParamInterface<WeightsCase> {};

TEST_P(WeightsErrorTest, NamesFileAndProblem) {
  const WeightsCase& c = GetParam();
  write_model(kTinyToml, c.make(tiny_tensors(rng_)));
  const std::string error = load_error();
  EXPECT_NE(error.find(weights_path()), std::string::npos) << error;
  EXPECT_NE(error.find(c.message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(Cases, WeightsErrorTest, ::testing::ValuesIn(weights_cases()), CaseName());

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

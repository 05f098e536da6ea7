// The graph format (model format version 2): layers that name their inputs, the ops that read
// several (add, mul, concat), the smooth activations, dropout and identity removed at load; every
// way a graph can be wrong; and the CPU backend on each op and on graphs against the
// double-precision reference of reference.h, within its derived bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include "backends/cpu/cpu_backend.h"
#include "graph/model_error.h"
#include "formats/model_file.h"
#include "tests/support/model_cases.h"
#include "tests/support/temp_dir.h"
#include "tests/support/reference.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

const char* kGraphToml = R"(format = "infer-model"
format_version = 2
name = "graph"
weights = "graph.safetensors"

[input]
channels = 2
height = 5
width = 5
mean = [0.5, 0.5]
std = [0.25, 0.25]

[[layers]]
name = "conv1"
type = "conv2d"
out_channels = 2
kernel = 3
padding = 1

[[layers]]
name = "drop"
type = "dropout"
p = 0.2

[[layers]]
name = "relu1"
type = "relu"

[[layers]]
name = "sum"
type = "add"
inputs = ["relu1", "input"]
relu = true

[[layers]]
name = "same"
type = "identity"

[[layers]]
name = "gate"
type = "sigmoid"
inputs = "same"

[[layers]]
name = "scaled"
type = "mul"
inputs = ["sum", "gate"]

[[layers]]
name = "joined"
type = "concat"
inputs = ["scaled", "drop", "input"]

[[layers]]
name = "flat"
type = "flatten"

[[layers]]
name = "fc"
type = "linear"
out_features = 3
)";

std::vector<Tensor> graph_tensors(Random& rng) {
  return {f32("conv1.weight", {2, 2, 3, 3}, rng), f32("conv1.bias", {2}, rng), f32("fc.weight", {3, 150}, rng),
          f32("fc.bias", {3}, rng)};
}

class GraphFile : public ::testing::Test {
 protected:
  void write(const std::string& toml, std::vector<Tensor> more_tensors = {}) {
    std::vector<Tensor> tensors = graph_tensors(rng_);
    for (Tensor& t : more_tensors) tensors.push_back(std::move(t));
    write_file(dir_ / "graph.toml", toml);
    write_file(dir_ / "graph.safetensors", safetensors_bytes(tensors));
  }
  std::string load_error(const std::string& toml) {
    write(toml);
    try {
      load_model(dir_ / "graph.toml");
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "the model loaded but should have been refused";
    return "";
  }
  static std::string edited(const std::string& from, const std::string& to) {
    std::string toml = kGraphToml;
    const std::size_t at = toml.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? toml : toml.replace(at, from.size(), to);
  }

  Random rng_;
  TempDir dir_;
};

std::vector<std::string> names(const Network& net) {
  std::vector<std::string> out;
  for (const Layer& l : net.layers()) out.push_back(l.name);
  return out;
}

TEST_F(GraphFile, LayersReadTheirNamedInputsAndDropoutAndIdentityAreRemoved) {
  SCOPED_TRACE(rng_.trace());
  write(kGraphToml);
  const LoadedModel m = load_model(dir_ / "graph.toml");
  const Network& net = m.network;
  EXPECT_EQ(names(net), (std::vector<std::string>{"conv1", "relu1", "sum", "gate", "scaled", "joined", "flat", "fc"}));
  auto sources = [&](std::size_t i) { return net.layers()[i].sources; };
  using S = std::vector<std::size_t>;
  EXPECT_EQ(sources(0), (S{0}));        // the network input
  EXPECT_EQ(sources(1), (S{1}));        // relu1 read "drop", which passes conv1 on
  EXPECT_EQ(sources(2), (S{2, 0}));     // sum: relu1 and the input
  EXPECT_EQ(sources(3), (S{3}));        // gate read "same", which passes sum on
  EXPECT_EQ(sources(4), (S{3, 4}));     // scaled: sum * gate
  EXPECT_EQ(sources(5), (S{5, 1, 0}));  // joined: scaled, conv1 (through "drop") and the input
  EXPECT_EQ(sources(6), (S{6}));
  EXPECT_EQ(net.layers()[5].out, (Dims{6, 5, 5}));
  EXPECT_EQ(net.output_dims(), (Dims{3, 1, 1}));
  EXPECT_EQ(net.layers()[0].readers, 2);  // relu1 and joined
  EXPECT_EQ(net.layers()[7].readers, 1);  // the network output
  EXPECT_TRUE(net.layers()[2].add().relu);

  // And it computes what the graph says: the CPU against the reference, every layer count.
  const int n = 2;
  const std::vector<float> input = rng_.vector(static_cast<std::size_t>(n) * net.input().dims.size());
  const std::vector<ReferenceTensor> ref = reference_forward(net, input, n, net.layers().size(), cpu_winograd());
  auto cpu = make_cpu_backend(net, n);
  for (std::size_t count = 1; count <= net.layers().size(); ++count) {
    std::vector<float> got(ref[count].value.size(), std::numeric_limits<float>::quiet_NaN());
    cpu->forward(input.data(), n, got.data(), count);
    expect_close(got, ref[count].value, reference_tolerance(ref[count]), "layers [0, " + std::to_string(count) + ")");
  }
}

// An upsample reads its scale as [h, w] (or one integer for both), and runs as the reference says.
TEST_F(GraphFile, AnUpsampleReadsItsScale) {
  SCOPED_TRACE(rng_.trace());
  write(edited("name = \"flat\"",
               "name = \"up\"\ntype = \"upsample\"\nscale = [2, 3]\n\n[[layers]]\nname = \"down\"\n"
               "type = \"maxpool\"\nkernel = [2, 3]\n\n[[layers]]\nname = \"flat\""));
  const LoadedModel m = load_model(dir_ / "graph.toml");
  const Layer& up = m.network.layers()[6];
  ASSERT_EQ(up.name, "up");
  EXPECT_EQ(up.upsample().scale_h, 2);
  EXPECT_EQ(up.upsample().scale_w, 3);
  EXPECT_EQ(up.out, (Dims{6, 10, 15}));
  const int n = 2;
  const std::vector<float> input = rng_.vector(static_cast<std::size_t>(n) * m.network.input().dims.size());
  const std::vector<ReferenceTensor> ref = reference_forward(m.network, input, n, 7, cpu_winograd());
  std::vector<float> got(ref[7].value.size(), std::numeric_limits<float>::quiet_NaN());
  make_cpu_backend(m.network, n)->forward(input.data(), n, got.data(), 7);
  expect_close(got, ref[7].value, reference_tolerance(ref[7]), "up to the upsample");

  write(edited("name = \"flat\"", "name = \"up\"\ntype = \"upsample\"\nscale = 1\n\n[[layers]]\nname = \"flat\""));
  EXPECT_EQ(load_model(dir_ / "graph.toml").network.layers()[6].out, (Dims{6, 5, 5})) << "scale = 1: both sides";
}

// A layernorm reads its epsilon and its weight and bias, one per channel, and runs as the
// reference says.
TEST_F(GraphFile, ALayernormReadsItsEpsilonAndTensors) {
  SCOPED_TRACE(rng_.trace());
  write(edited("name = \"flat\"", "name = \"ln\"\ntype = \"layernorm\"\nepsilon = 1e-6\n\n[[layers]]\nname = \"flat\""),
        {f32("ln.weight", {6}, rng_), f32("ln.bias", {6}, rng_)});
  const LoadedModel m = load_model(dir_ / "graph.toml");
  const Layer& ln = m.network.layers()[6];
  ASSERT_EQ(ln.name, "ln");
  EXPECT_EQ(ln.layernorm().epsilon, 1e-6);
  EXPECT_EQ(ln.out, (Dims{6, 5, 5}));
  ASSERT_EQ(ln.params.weight.size(), 6u);
  ASSERT_EQ(ln.params.bias.size(), 6u);
  const int n = 2;
  const std::vector<float> input = rng_.vector(static_cast<std::size_t>(n) * m.network.input().dims.size());
  const std::vector<ReferenceTensor> ref = reference_forward(m.network, input, n, 7, cpu_winograd());
  std::vector<float> got(ref[7].value.size(), std::numeric_limits<float>::quiet_NaN());
  make_cpu_backend(m.network, n)->forward(input.data(), n, got.data(), 7);
  expect_close(got, ref[7].value, reference_tolerance(ref[7]), "up to the layernorm");

  write(edited("name = \"flat\"", "name = \"ln\"\ntype = \"layernorm\"\n\n[[layers]]\nname = \"flat\""),
        {f32("ln.weight", {6}, rng_), f32("ln.bias", {6}, rng_)});
  EXPECT_EQ(load_model(dir_ / "graph.toml").network.layers()[6].layernorm().epsilon, 1e-5) << "PyTorch's default";
}

// A resize reads its size and align_corners (mode, when given, must be "bilinear") and runs as
// the reference says.
TEST_F(GraphFile, AResizeReadsItsSizeAndAlignCorners) {
  SCOPED_TRACE(rng_.trace());
  for (const std::string& extra : {std::string("align_corners = true\n"), std::string("mode = \"bilinear\"\n")}) {
    // Up to 7x12, then back to 5x5 (one integer: both sides) for the linear layer after it.
    write(edited("name = \"flat\"", "name = \"up\"\ntype = \"resize\"\nsize = [7, 12]\n" + extra +
                                        "\n[[layers]]\nname = \"down\"\ntype = \"resize\"\nsize = 5\n"
                                        "\n[[layers]]\nname = \"flat\""));
    const LoadedModel m = load_model(dir_ / "graph.toml");
    const Layer& up = m.network.layers()[6];
    ASSERT_EQ(up.name, "up");
    EXPECT_EQ(up.resize().align_corners, extra.rfind("align_corners", 0) == 0);
    EXPECT_EQ(up.out, (Dims{6, 7, 12}));
    EXPECT_EQ(m.network.layers()[7].out, (Dims{6, 5, 5}));
    EXPECT_FALSE(m.network.layers()[7].resize().align_corners);
    const int n = 2;
    const std::vector<float> input = rng_.vector(static_cast<std::size_t>(n) * m.network.input().dims.size());
    const std::vector<ReferenceTensor> ref = reference_forward(m.network, input, n, 8, cpu_winograd());
    for (std::size_t count : {7, 8}) {
      std::vector<float> got(ref[count].value.size(), std::numeric_limits<float>::quiet_NaN());
      make_cpu_backend(m.network, n)->forward(input.data(), n, got.data(), count);
      expect_close(got, ref[count].value, reference_tolerance(ref[count]), "layers [0, " + std::to_string(count) + ")");
    }
  }
}

// A channel shuffle reads its groups, keeps the shape and runs as the reference says.
TEST_F(GraphFile, AChannelShuffleReadsItsGroups) {
  SCOPED_TRACE(rng_.trace());
  write(
      edited("name = \"flat\"", "name = \"s\"\ntype = \"channel_shuffle\"\ngroups = 2\n\n[[layers]]\nname = \"flat\""));
  const LoadedModel m = load_model(dir_ / "graph.toml");
  const Layer& s = m.network.layers()[6];
  ASSERT_EQ(s.name, "s");
  EXPECT_EQ(s.channel_shuffle().groups, 2);
  EXPECT_EQ(s.out, (Dims{6, 5, 5}));
  const int n = 2;
  const std::vector<float> input = rng_.vector(static_cast<std::size_t>(n) * m.network.input().dims.size());
  const std::vector<ReferenceTensor> ref = reference_forward(m.network, input, n, 7, cpu_winograd());
  std::vector<float> got(ref[7].value.size(), std::numeric_limits<float>::quiet_NaN());
  make_cpu_backend(m.network, n)->forward(input.data(), n, got.data(), 7);
  expect_close(got, ref[7].value, reference_tolerance(ref[7]), "up to the channel shuffle");
}

// Two channel slices read their begin and end (ShuffleNet V2's halves of the 6 joined channels,
// joined again the other way round); each has end - begin channels, and the graph runs as the
// reference says.
TEST_F(GraphFile, AChannelSliceReadsItsBeginAndEnd) {
  SCOPED_TRACE(rng_.trace());
  write(edited("name = \"flat\"",
               "name = \"a\"\ntype = \"channel_slice\"\nbegin = 0\nend = 3\n\n[[layers]]\n"
               "name = \"b\"\ntype = \"channel_slice\"\ninputs = \"joined\"\nbegin = 3\nend = 6\n\n[[layers]]\n"
               "name = \"swapped\"\ntype = \"concat\"\ninputs = [\"b\", \"a\"]\n\n[[layers]]\nname = \"flat\""));
  const LoadedModel m = load_model(dir_ / "graph.toml");
  const Layer& a = m.network.layers()[6];
  const Layer& b = m.network.layers()[7];
  ASSERT_EQ(a.name, "a");
  ASSERT_EQ(b.name, "b");
  EXPECT_EQ((std::vector<int>{a.channel_slice().begin, a.channel_slice().end, b.channel_slice().begin,
                              b.channel_slice().end}),
            (std::vector<int>{0, 3, 3, 6}));
  EXPECT_EQ(a.out, (Dims{3, 5, 5}));
  EXPECT_EQ(b.out, (Dims{3, 5, 5}));
  EXPECT_EQ(m.network.layers()[8].out, (Dims{6, 5, 5}));
  const int n = 2;
  const std::vector<float> input = rng_.vector(static_cast<std::size_t>(n) * m.network.input().dims.size());
  const std::vector<ReferenceTensor> ref = reference_forward(m.network, input, n, 9, cpu_winograd());
  std::vector<float> got(ref[9].value.size(), std::numeric_limits<float>::quiet_NaN());
  make_cpu_backend(m.network, n)->forward(input.data(), n, got.data(), 9);
  expect_close(got, ref[9].value, reference_tolerance(ref[9]), "up to the halves joined the other way round");
}

// A pad reads pads = [top, left, bottom, right] and value, -inf included (TOML's -inf).
TEST_F(GraphFile, APadReadsItsBorderAndValue) {
  write(edited("name = \"flat\"",
               "name = \"p\"\ntype = \"pad\"\npads = [1, 0, 2, 3]\nvalue = -inf\n\n[[layers]]\n"
               "name = \"down\"\ntype = \"maxpool\"\nkernel = [4, 4]\nstride = 1\n\n[[layers]]\nname = \"flat\""));
  const LoadedModel m = load_model(dir_ / "graph.toml");
  const Layer& p = m.network.layers()[6];
  ASSERT_EQ(p.name, "p");
  EXPECT_EQ((std::vector<int>{p.pad().top, p.pad().left, p.pad().bottom, p.pad().right}),
            (std::vector<int>{1, 0, 2, 3}));
  EXPECT_EQ(p.pad().value, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(p.out, (Dims{6, 8, 8}));
  EXPECT_EQ(m.network.layers()[7].out, (Dims{6, 5, 5}));
}

TEST_F(GraphFile, EveryWrongGraphIsRefusedNamingTheLayer) {
  struct Case {
    const char* what;
    std::string toml;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"an input that comes later", edited("inputs = [\"relu1\", \"input\"]", "inputs = [\"gate\", \"input\"]"),
       "layer 'sum' (add): reads 'gate', which comes after it; list the layers in the order they run"},
      {"an input that is no layer", edited("inputs = [\"relu1\", \"input\"]", "inputs = [\"relu9\", \"input\"]"),
       "layer 'sum' (add): reads 'relu9', which is no layer of the model (nor 'input')"},
      {"too many inputs", edited("inputs = \"same\"", "inputs = [\"same\", \"conv1\"]"),
       "layer 'gate' (sigmoid): reads one input, found 2"},
      {"too few inputs", edited("inputs = [\"sum\", \"gate\"]", "inputs = [\"sum\"]"),
       "layer 'scaled' (mul): reads two inputs, found 1"},
      {"a concat of one", edited("inputs = [\"scaled\", \"drop\", \"input\"]", "inputs = [\"scaled\"]"),
       "layer 'joined' (concat): reads two or more inputs, found 1"},
      {"an empty list", edited("inputs = \"same\"", "inputs = []"), "key 'inputs' must name at least one layer"},
      {"an output nobody reads",
       edited("name = \"fc\"",
              "name = \"orphan\"\ntype = \"flatten\"\ninputs = \"input\"\n\n[[layers]]\nname = \"fc\""),
       "layer 'flat' (flatten): its output is never read"},
      {"a layer named input", edited("name = \"relu1\"", "name = \"input\""),
       "no layer may be named 'input': it stands for the network input"},
      {"a dropout and a layer with one name", edited("name = \"same\"", "name = \"drop\""),
       "two layers are named 'drop'"},
      {"a dropout probability of 1", edited("p = 0.2", "p = 1.0"), "key 'p' must be in [0, 1), found 1"},
      {"an add of two shapes",
       edited("inputs = [\"scaled\", \"drop\", \"input\"]",
              "inputs = [\"scaled\", \"drop\", \"input\"]\n\n[[layers]]\nname = \"bad\"\ntype = \"add\"\ninputs = "
              "[\"joined\", \"input\"]"),
       "layer 'bad' (add): adds inputs of the same shape, found 6x5x5 and 2x5x5"},
      {"a clip with min above max",
       edited("name = \"flat\"", "name = \"c\"\ntype = \"clip\"\nmin = 2\nmax = 1\n\n[[layers]]\nname = \"flat\""),
       "min and max must be numbers with min <= max, found 2 and 1"},
      {"a trailing dropout that passes on another layer",
       edited("out_features = 3\n",
              "out_features = 3\n\n[[layers]]\nname = \"tail\"\ntype = \"dropout\"\ninputs = \"flat\"\n"),
       "the last entry passes on 'flat', but the network's output is the last layer's ('fc')"},
      {"an identity named input", edited("name = \"same\"", "name = \"input\""),
       "no layer may be named 'input': it stands for the network input"},
      {"a clip without max",
       edited("name = \"flat\"", "name = \"c\"\ntype = \"clip\"\nmin = 0\n\n[[layers]]\nname = \"flat\""),
       "layer 'c': missing key 'max'"},
      {"an attribute an op does not have", edited("relu = true", "relu = true\nalpha = 0.5"),
       "layer 'sum': unknown key 'alpha'"},
      {"pads of three",
       edited("name = \"flat\"", "name = \"p\"\ntype = \"pad\"\npads = [1, 1, 1]\n\n[[layers]]\nname = \"flat\""),
       "key 'pads' must be [top, left, bottom, right]"},
      {"a negative pad",
       edited("name = \"flat\"", "name = \"p\"\ntype = \"pad\"\npads = [0, -1, 0, 0]\n\n[[layers]]\nname = \"flat\""),
       "key 'pads' has -1, out of range [0, 1000000]"},
      {"a NaN padding value",
       edited("name = \"flat\"",
              "name = \"p\"\ntype = \"pad\"\npads = [1, 1, 1, 1]\nvalue = nan\n\n[[layers]]\nname = \"flat\""),
       "key 'value' must be a number or an infinity, found NaN"},
      {"an adaptive pooling without its output",
       edited("name = \"flat\"", "name = \"a\"\ntype = \"adaptive_avgpool\"\n\n[[layers]]\nname = \"flat\""),
       "layer 'a': missing key 'output'"},
      {"a channel shuffle without its groups",
       edited("name = \"flat\"", "name = \"s\"\ntype = \"channel_shuffle\"\n\n[[layers]]\nname = \"flat\""),
       "layer 's': missing key 'groups'"},
      {"a channel shuffle of 0 groups",
       edited("name = \"flat\"", "name = \"s\"\ntype = \"channel_shuffle\"\ngroups = 0\n\n[[layers]]\nname = \"flat\""),
       "key 'groups' = 0 is out of range [1, 1000000]"},
      {"a channel shuffle whose groups do not divide the channels",
       edited("name = \"flat\"", "name = \"s\"\ntype = \"channel_shuffle\"\ngroups = 4\n\n[[layers]]\nname = \"flat\""),
       "layer 's' (channel_shuffle): groups = 4 must divide the input channels (6)"},
      {"a channel slice without its begin",
       edited("name = \"flat\"", "name = \"s\"\ntype = \"channel_slice\"\nend = 2\n\n[[layers]]\nname = \"flat\""),
       "layer 's': missing key 'begin'"},
      {"a channel slice without its end",
       edited("name = \"flat\"", "name = \"s\"\ntype = \"channel_slice\"\nbegin = 0\n\n[[layers]]\nname = \"flat\""),
       "layer 's': missing key 'end'"},
      {"a channel slice from a negative channel",
       edited("name = \"flat\"",
              "name = \"s\"\ntype = \"channel_slice\"\nbegin = -1\nend = 2\n\n[[layers]]\nname = \"flat\""),
       "key 'begin' = -1 is out of range [0, 1000000]"},
      {"a channel slice past the last channel",
       edited("name = \"flat\"",
              "name = \"s\"\ntype = \"channel_slice\"\nbegin = 2\nend = 7\n\n[[layers]]\nname = \"flat\""),
       "layer 's' (channel_slice): end = 7 is over the input channels (6)"},
      {"an empty channel slice",
       edited("name = \"flat\"",
              "name = \"s\"\ntype = \"channel_slice\"\nbegin = 3\nend = 3\n\n[[layers]]\nname = \"flat\""),
       "layer 's' (channel_slice): begin = 3 must be less than end = 3"},
      {"a resize without a size",
       edited("name = \"flat\"", "name = \"r\"\ntype = \"resize\"\n\n[[layers]]\nname = \"flat\""),
       "missing key 'size'"},
      {"a resize to 0 rows",
       edited("name = \"flat\"", "name = \"r\"\ntype = \"resize\"\nsize = [0, 4]\n\n[[layers]]\nname = \"flat\""),
       "key 'size' has 0, out of range [1, 1000000]"},
      {"a resize in another mode",
       edited("name = \"flat\"",
              "name = \"r\"\ntype = \"resize\"\nsize = 4\nmode = \"nearest\"\n\n[[layers]]\nname = \"flat\""),
       "key 'mode' must be \"bilinear\", found \"nearest\""},
      {"a layernorm with epsilon 0",
       edited("name = \"flat\"", "name = \"ln\"\ntype = \"layernorm\"\nepsilon = 0\n\n[[layers]]\nname = \"flat\""),
       "layer 'ln': epsilon must be a positive finite number, found 0"},
      {"an upsample by 0",
       edited("name = \"flat\"", "name = \"up\"\ntype = \"upsample\"\nscale = [0, 2]\n\n[[layers]]\nname = \"flat\""),
       "key 'scale' has 0, out of range [1, 1000000]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string error = load_error(c.toml);
    EXPECT_NE(error.find((dir_ / "graph.toml").string()), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

// PyTorch's ceil_mode sizes (torch.nn.MaxPool2d docs): a last window that would start in the right
// padding is dropped.
TEST(Graph, CeilModePoolingSizesArePyTorchs) {
  EXPECT_EQ(pool_output_size(10, 3, 2, 0, false), 4);
  EXPECT_EQ(pool_output_size(10, 3, 2, 0, true), 5);
  EXPECT_EQ(pool_output_size(10, 3, 2, 1, true), 6);  // (10 + 2 - 3) / 2 = 4.5 -> 5, + 1
  EXPECT_EQ(pool_output_size(8, 2, 2, 0, true), 4);   // exact: no overhang
  EXPECT_EQ(pool_output_size(5, 2, 2, 1, true),
            3);  // ceil(5 / 2) + 1 = 4, but window 3 would start at 6 - 1 = 5: in the right padding
  EXPECT_EQ(pool_output_size(13, 3, 2, 0, true), 6);  // SqueezeNet's 111 -> 55 pattern, small
  EXPECT_EQ(pool_output_size(111, 3, 2, 0, true), 55);
  EXPECT_EQ(pool_output_size(54, 3, 2, 0, true), 27);
}

TEST(Graph, ShapesTheOpsCannotCombineAreRefused) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  auto error = [&](Dims input, std::vector<Layer> layers) -> std::string {
    try {
      random_network(rng, input, std::move(layers));
    } catch (const ModelError& e) {
      return e.what();
    }
    ADD_FAILURE() << "the network was accepted";
    return "";
  };
  EXPECT_NE(error({4, 6, 6}, {conv_layer("c", 3, 1), reading(make_layer("m", LayerKind::Mul), {"input", "c"})})
                .find("layer 'm' (mul): multiplies by an input of the same shape or of 4x1x1 (one value per channel), "
                      "found 4x6x6 and 3x6x6"),
            std::string::npos);
  EXPECT_NE(error({4, 6, 6}, {pool_layer("p", LayerKind::MaxPool, 2, 2),
                              reading(make_layer("j", LayerKind::Concat), {"p", "input"})})
                .find("layer 'j' (concat): joins inputs along the channels, so their heights and widths must agree, "
                      "found 4x3x3 and 4x6x6"),
            std::string::npos);
  EXPECT_NE(error({4, 6, 6},
                  {make_layer("c", LayerKind::Clip, PointwiseAttrs{0.0f, std::numeric_limits<float>::quiet_NaN()})})
                .find("min and max must be numbers with min <= max"),
            std::string::npos);
  // An infinite bound is no bound (ONNX's Clip without max).
  EXPECT_NO_THROW(
      random_network(rng, {4, 6, 6},
                     {make_layer("c", LayerKind::Clip, PointwiseAttrs{0.0f, std::numeric_limits<float>::infinity()})}));
  EXPECT_NE(error({4, 6, 6}, {make_layer("h", LayerKind::HardSigmoid,
                                         PointwiseAttrs{std::numeric_limits<float>::quiet_NaN(), 0.5f})})
                .find("alpha and beta must be finite"),
            std::string::npos);
  EXPECT_NE(error({6, 4, 4}, {make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{4})})
                .find("layer 's' (channel_shuffle): groups = 4 must divide the input channels (6)"),
            std::string::npos);
  EXPECT_NE(error({6, 4, 4}, {make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{0})})
                .find("layer 's' (channel_shuffle): groups must be positive, found 0"),
            std::string::npos);
  EXPECT_NE(error({6, 4, 4}, {make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{2, 7})})
                .find("layer 's' (channel_slice): end = 7 is over the input channels (6)"),
            std::string::npos);
  EXPECT_NE(error({6, 4, 4}, {make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{4, 2})})
                .find("layer 's' (channel_slice): begin = 4 must be less than end = 2"),
            std::string::npos);
  EXPECT_NE(error({6, 4, 4}, {make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{-1, 2})})
                .find("layer 's' (channel_slice): begin must not be negative, found -1"),
            std::string::npos);
  EXPECT_NE(error({6, 4, 4}, {make_layer("s", LayerKind::ChannelSlice)}).find("its attributes are another op's"),
            std::string::npos);
  EXPECT_NO_THROW(random_network(rng, {6, 4, 4}, {make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{0, 6})}))
      << "the whole input";
  // A per-channel mul takes its scale second; the same shape works either way.
  EXPECT_NO_THROW(random_network(
      rng, {4, 6, 6},
      {plain_layer("g", LayerKind::GlobalAvgPool), reading(make_layer("m", LayerKind::Mul), {"input", "g"})}));
}

// The op table of docs/model-format.md names every op of graph/ops.h in the first cell of a row:
// a new op is documented before the suite passes.
TEST(Graph, TheReadmeOpTableNamesEveryOp) {
  std::ifstream readme(INFER_SOURCE_DIR "/docs/model-format.md");
  ASSERT_TRUE(readme) << INFER_SOURCE_DIR "/docs/model-format.md";
  std::vector<std::string> first_cells;
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("| `", 0) == 0) first_cells.push_back(line.substr(0, line.find(" |", 1)));
  }
  for (LayerKind kind : kAllOps) {
    const std::string quoted = "`" + std::string(op_name(kind)) + "`";
    const bool found = std::any_of(first_cells.begin(), first_cells.end(),
                                   [&](const std::string& cell) { return cell.find(quoted) != std::string::npos; });
    EXPECT_TRUE(found) << "docs/model-format.md has no op-table row for " << quoted;
  }
}

// The graph zoo (test_util.h) holds every op of graph/ops.h, so that a new op joins the tests that
// run it (the CPU against the reference below, the GPU against the CPU, the cuDNN planning tests)
// as soon as it is added to the zoo, and this test fails until it is.
TEST(Graph, TheZooHoldsEveryOp) {
  const std::vector<Layer> zoo = graph_zoo_layers();
  for (LayerKind kind : kAllOps) {
    const bool found = std::any_of(zoo.begin(), zoo.end(), [kind](const Layer& l) { return l.kind == kind; });
    EXPECT_TRUE(found) << "graph_zoo_layers() has no " << op_name(kind) << " layer";
  }
}

// One case: a network, and the CPU must be within the reference's bound at every layer count.
struct OpCase {
  std::string what;
  Dims input;
  std::vector<Layer> layers;
};

std::vector<OpCase> op_cases() {
  std::vector<OpCase> cases = {
      {"sigmoid", {3, 5, 6}, {plain_layer("s", LayerKind::Sigmoid)}},
      {"silu", {3, 5, 6}, {plain_layer("s", LayerKind::Silu)}},
      {"relu6", {3, 5, 6}, {make_layer("c", LayerKind::Clip, PointwiseAttrs{0.0f, 0.5f})}},
      {"clip below zero", {3, 5, 6}, {make_layer("c", LayerKind::Clip, PointwiseAttrs{-0.25f, 0.25f})}},
      {"hardsigmoid, PyTorch", {3, 5, 6}, {plain_layer("h", LayerKind::HardSigmoid)}},
      {"hardsigmoid, ONNX default", {3, 5, 6}, {make_layer("h", LayerKind::HardSigmoid, PointwiseAttrs{0.2f, 0.5f})}},
      {"hardswish", {3, 5, 6}, {plain_layer("h", LayerKind::HardSwish)}},
      {"leaky relu", {3, 5, 6}, {make_layer("l", LayerKind::LeakyRelu, PointwiseAttrs{0.2f, 0.0f})}},
      {"gelu", {3, 5, 6}, {plain_layer("g", LayerKind::Gelu)}},
      {"upsample 3x2", {3, 5, 6}, {make_layer("u", LayerKind::Upsample, UpsampleAttrs{3, 2})}},
      {"layernorm over 7 channels", {7, 5, 6}, {make_layer("n", LayerKind::LayerNorm, LayerNormAttrs{1e-5})}},
      {"layernorm, epsilon 1, after a conv",
       {3, 6, 5},
       {conv_layer("c", 16, 1), make_layer("n", LayerKind::LayerNorm, LayerNormAttrs{1.0})}},
      {"resize 5x6 to 11x13, half-pixel", {3, 5, 6}, {make_layer("r", LayerKind::Resize, ResizeAttrs{11, 13, false})}},
      {"resize 5x6 to 11x13, align_corners",
       {3, 5, 6},
       {make_layer("r", LayerKind::Resize, ResizeAttrs{11, 13, true})}},
      {"resize 5x6 down to 2x4, half-pixel", {3, 5, 6}, {make_layer("r", LayerKind::Resize, ResizeAttrs{2, 4, false})}},
      {"resize 5x6 to 1x1, align_corners", {3, 5, 6}, {make_layer("r", LayerKind::Resize, ResizeAttrs{1, 1, true})}},
      {"resize 1x1 to 4x3 after a conv",
       {3, 1, 1},
       {conv_layer("c", 4, 1), make_layer("r", LayerKind::Resize, ResizeAttrs{4, 3, false})}},
      {"adaptive avgpool 5x6 to 3x4 (windows of 2 and 3, overlapping)",
       {3, 5, 6},
       {make_layer("a", LayerKind::AdaptiveAvgPool, AdaptivePoolAttrs{3, 4})}},
      {"adaptive avgpool to more than the input",
       {3, 5, 6},
       {make_layer("a", LayerKind::AdaptiveAvgPool, AdaptivePoolAttrs{7, 6})}},
      {"pad 1, 0, 2, 3 with 0.5", {3, 5, 6}, {make_layer("p", LayerKind::Pad, PadAttrs{1, 0, 2, 3, 0.5f})}},
      {"pad with -inf, max pooling",
       {3, 5, 6},
       {make_layer("p", LayerKind::Pad, PadAttrs{0, 1, 1, 0, -std::numeric_limits<float>::infinity()}),
        pool_layer("m", LayerKind::MaxPool, 2, 2)}},
      // 6 channels in 2 groups of 3, 12 in 3 of 4: neither is its own inverse; after a convolution
      // oneDNN's shuffle reads its blocked layout.
      {"channel shuffle, 2 groups", {6, 5, 4}, {make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{2})}},
      {"channel shuffle, 3 groups after a conv, then a 1x1 conv",
       {3, 5, 6},
       {conv_layer("c", 12, 3, 1, 1), make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{3}),
        conv_layer("mix", 5, 1)}},
      {"channel shuffle, 1 group (the identity)",
       {4, 3, 5},
       {make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{1})}},
      {"channel shuffle, one channel per group (the identity)",
       {4, 3, 5},
       {make_layer("s", LayerKind::ChannelShuffle, ChannelShuffleAttrs{4})}},
      // After a convolution oneDNN's blocked layout is reordered to plain NCHW first.
      {"channel slice [2, 5) of 7", {7, 5, 4}, {make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{2, 5})}},
      {"channel slice [3, 11) after a conv of 16, then a 1x1 conv",
       {3, 5, 6},
       {conv_layer("c", 16, 3, 1, 1), make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{3, 11}),
        conv_layer("mix", 5, 1)}},
      {"channel slice, the last channel",
       {4, 3, 5},
       {make_layer("s", LayerKind::ChannelSlice, ChannelSliceAttrs{3, 4})}},
      {"ShuffleNet V2 unit", {3, 5, 6}, shufflenet_unit_layers()},
      {"upsample 1x4 after a conv",
       {3, 5, 6},
       {conv_layer("c", 4, 3, 1, 1), make_layer("u", LayerKind::Upsample, UpsampleAttrs{1, 4})}},
      {"add",
       {3, 5, 6},
       {conv_layer("c", 3, 3, 1, 1), reading(make_layer("a", LayerKind::Add, AddAttrs{}), {"c", "input"})}},
      {"add with relu",
       {3, 5, 6},
       {conv_layer("c", 3, 3, 1, 1), reading(make_layer("a", LayerKind::Add, AddAttrs{true}), {"input", "c"})}},
      // ResNet's block: the last convolution (with its batch-norm) adds the shortcut relu0, which
      // nothing reads after the add (oneDNN: a sum post-op into relu0's buffer), then a ReLU.
      {"residual block",
       {3, 6, 5},
       {conv_layer("c0", 8, 3, 1, 1), plain_layer("relu0", LayerKind::Relu), conv_layer("c1", 8, 3, 1, 1),
        plain_layer("relu1", LayerKind::Relu), conv_layer("c2", 8, 3, 1, 1), batchnorm_layer("bn2"),
        reading(make_layer("add", LayerKind::Add, AddAttrs{}), {"bn2", "relu0"}),
        plain_layer("relu", LayerKind::Relu)}},
      {"residual block, the add's own ReLU, a projection shortcut",
       {3, 6, 5},
       {conv_layer("c0", 8, 3, 1, 1), plain_layer("relu0", LayerKind::Relu), conv_layer("c1", 8, 3, 2, 1),
        reading(conv_layer("down", 8, 1, 2), {"relu0"}),
        reading(make_layer("add", LayerKind::Add, AddAttrs{true}), {"down", "c1"}),
        plain_layer("h", LayerKind::HardSwish)}},
      {"residual block, an activation after the add",
       {3, 6, 5},
       {conv_layer("c0", 8, 3, 1, 1), conv_layer("c1", 8, 3, 1, 1),
        reading(make_layer("add", LayerKind::Add, AddAttrs{}), {"c0", "c1"}), plain_layer("h", LayerKind::HardSwish)}},
      // The shortcut h is also read, as the flatten's view of its buffer, after the add: oneDNN
      // may not sum into h's buffer (onednn_program.cpp residual_input).
      {"residual add whose shortcut a flatten still reads",
       {3, 6, 5},
       {plain_layer("h", LayerKind::HardSigmoid), plain_layer("f", LayerKind::Flatten),
        reading(conv_layer("c", 3, 3, 1, 1), {"input"}),
        reading(make_layer("a", LayerKind::Add, AddAttrs{}), {"c", "h"}), plain_layer("g", LayerKind::GlobalAvgPool),
        reading(linear_layer("fc", 4), {"f"}), reading(make_layer("cat", LayerKind::Concat), {"fc", "g"})}},
      {"add, then a ReLU layer",
       {3, 5, 6},
       {conv_layer("c", 3, 3, 1, 1), reading(make_layer("a", LayerKind::Add, AddAttrs{}), {"input", "c"}),
        plain_layer("r", LayerKind::Relu)}},
      {"mul, then hardswish",
       {3, 5, 6},
       {conv_layer("c", 3, 1), reading(make_layer("m", LayerKind::Mul), {"c", "input"}),
        plain_layer("h", LayerKind::HardSwish)}},
      {"mul, same shape", {3, 5, 6}, {conv_layer("c", 3, 1), reading(make_layer("m", LayerKind::Mul), {"c", "input"})}},
      {"mul by one value per channel",
       {3, 5, 6},
       {plain_layer("g", LayerKind::GlobalAvgPool), plain_layer("s", LayerKind::Sigmoid),
        reading(make_layer("m", LayerKind::Mul), {"input", "s"})}},
      {"concat of three",
       {3, 5, 6},
       {conv_layer("c", 2, 1), reading(conv_layer("d", 4, 3, 1, 1), {"input"}),
        reading(make_layer("j", LayerKind::Concat), {"d", "input", "c"})}},
      // Nothing may be fused across a branch: c is read by its batch-norm and by the add.
      {"a convolution read by its batch-norm and an add",
       {3, 6, 6},
       {conv_layer("c", 3, 3, 1, 1), batchnorm_layer("bn"), plain_layer("r", LayerKind::Relu),
        reading(make_layer("a", LayerKind::Add, AddAttrs{}), {"r", "c"})}},
      {"maxpool, ceil mode", {3, 10, 11}, {ceil_mode(pool_layer("p", LayerKind::MaxPool, 3, 2))}},
      {"avgpool, ceil mode, padding counted",
       {3, 10, 10},
       {ceil_mode(pool_layer("p", LayerKind::AvgPool, 3, 2, 1, true))}},
      {"avgpool, ceil mode, padding not counted",
       {3, 10, 10},
       {ceil_mode(pool_layer("p", LayerKind::AvgPool, 3, 2, 1, false))}},
      // oneDNN runs it on the plain kernel between reorders (onednn_program.cpp).
      {"convolution padded beyond its kernel's extent",
       {2, 3, 4},
       {conv_layer("c", 3, 1, 2, 2), plain_layer("r", LayerKind::Relu)}},
      {"every op (graph zoo)", {3, 8, 8}, graph_zoo_layers()},
  };
  // Each pointwise op right after a convolution (with a batch-norm between) and a linear layer:
  // where a backend fuses it into that layer (oneDNN's eltwise post-ops), the fused form is checked.
  for (std::size_t i = 0; i < kPointwiseCount; ++i) {
    const auto op = static_cast<PointwiseOp>(i);
    const std::string name(op_name(layer_kind(op)));
    cases.push_back(
        {name + " after conv and batch-norm",
         {3, 5, 6},
         {conv_layer("c", 4, 3, 1, 1), batchnorm_layer("bn"), make_layer("p", layer_kind(op), pointwise_sample(op))}});
    cases.push_back({name + " after linear",
                     {12, 1, 1},
                     {linear_layer("fc", 7), make_layer("p", layer_kind(op), pointwise_sample(op))}});
  }
  return cases;
}

TEST(Graph, EveryOpOnTheCpuIsWithinTheReferenceBound) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.what);
    const Network net = random_network(rng, c.input, c.layers);
    const int n = 3;
    // Inputs in [-4, 4]: both sides of every clamp, the curved part of the smooth activations.
    const std::vector<float> input = rng.vector(static_cast<std::size_t>(n) * net.input().dims.size(), -4.0f, 4.0f);
    for (CpuKernels kernels : {CpuKernels::Onednn, CpuKernels::Plain}) {
      const std::string name = kernels == CpuKernels::Onednn ? "onednn" : "plain";
      const std::vector<ReferenceTensor> ref =
          reference_forward(net, input, n, net.layers().size(), cpu_winograd(CpuOptions{kernels}));
      auto cpu = make_cpu_backend(net, n, CpuOptions{kernels});
      for (std::size_t count = 1; count <= net.layers().size(); ++count) {
        std::vector<float> got(ref[count].value.size(), std::numeric_limits<float>::quiet_NaN());
        cpu->forward(input.data(), n, got.data(), count);
        expect_close(
            got, ref[count].value, reference_tolerance(ref[count]),
            name + ", layers [0, " + std::to_string(count) + ") ending at '" + net.layers()[count - 1].name + "'");
      }
    }
  }
}

// The bound is not vacuous: an error of one part in 2^12 of the magnitude of the last op's values
// (its input and output) exceeds it for each op alone (the smooth ones included), so a kernel with
// a wrong constant cannot pass.
TEST(Graph, TheReferenceBoundIsTightForEachOpAlone) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  for (const OpCase& c : op_cases()) {
    if (c.layers.size() > 3) continue;  // deep graphs: the bound grows with depth, by design
    SCOPED_TRACE(c.what);
    // The scale is the last op's input and output, not its output alone: an activation that squashes
    // (a ReLU that zeroes every output of a small convolution, a hard-swish of mostly negative
    // inputs) shrinks its outputs far more than the rounding it inherits from its input.
    const Network net = random_network(rng, c.input, c.layers);
    const std::vector<float> input = rng.vector(net.input().dims.size(), -4.0f, 4.0f);
    const std::vector<ReferenceTensor> ref = reference_forward(net, input, 1, net.layers().size());
    double largest = 0.0, worst = 0.0;
    for (std::size_t l = ref.size() >= 2 ? ref.size() - 2 : 0; l < ref.size(); ++l) {
      for (double v : ref[l].value) largest = std::max(largest, std::fabs(v));
    }
    for (double b : ref.back().bound) worst = std::max(worst, b);
    EXPECT_LT(worst, largest / 4096.0);
  }
}

// Over one channel a pixel is its own mean: every output is the bias, exactly, whatever the input
// and weight (the variance is 0, so epsilon alone is under the root).
TEST(Graph, ALayernormOverOneChannelGivesItsBias) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {1, 4, 5}, {make_layer("n", LayerKind::LayerNorm, LayerNormAttrs{1e-6})});
  const std::vector<float> input = rng.vector(2 * net.input().dims.size(), -100.0f, 100.0f);
  std::vector<float> got(input.size(), std::numeric_limits<float>::quiet_NaN());
  make_cpu_backend(net, 2)->forward(input.data(), 2, got.data(), 1);
  for (float v : got) EXPECT_EQ(v, net.layers()[0].params.bias[0]);
}

// NaN in, NaN out, for every elementwise op (PyTorch's semantics; a clamp must not swallow it).
TEST(Graph, NaNPassesThroughEveryElementwiseOp) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const std::vector<Layer> ops = {plain_layer("s", LayerKind::Sigmoid),
                                  plain_layer("s", LayerKind::Silu),
                                  make_layer("c", LayerKind::Clip, PointwiseAttrs{0.0f, 6.0f}),
                                  plain_layer("h", LayerKind::HardSigmoid),
                                  plain_layer("h", LayerKind::HardSwish),
                                  plain_layer("r", LayerKind::Relu)};
  for (const Layer& op : ops) {
    SCOPED_TRACE(layer_kind_name(op.kind));
    const Network net = random_network(rng, {1, 1, 4}, {op});
    auto cpu = make_cpu_backend(net, 1);
    const std::vector<float> input = {std::numeric_limits<float>::quiet_NaN(), -100.0f, 100.0f, 0.5f};
    std::vector<float> got(4);
    cpu->forward(input.data(), 1, got.data(), 1);
    EXPECT_TRUE(std::isnan(got[0]));
    for (std::size_t i = 1; i < 4; ++i) EXPECT_TRUE(std::isfinite(got[i])) << i;
  }
}

}  // namespace
}  // namespace infer::test

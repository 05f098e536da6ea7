// The whole network against PyTorch: tests/data/golden.safetensors holds 300 Fashion-MNIST test
// images and the logits and probabilities PyTorch computed for them in float64 from the shipped
// weights (tools/train/golden.py).
//
// Tolerance: the contract is max |ours - PyTorch| <= 1e-4 on the logits. That is far above
// the float32 error we expect (for the largest dot product, K = 3136 terms of magnitude ~0.05,
// sqrt(K) * u * sum|terms| ~ 1e-6), so a failure means a semantic difference, not rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "formats/model_file.h"
#include "image/preprocess.h"
#include "formats/safetensors.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

constexpr double kLogitTolerance = 1e-4;

TEST(Golden, CpuBackendMatchesPyTorch) {
  const LoadedModel model = load_model(test_file("weights/fashion.toml"));
  const Network& net = model.network;
  const SafetensorsFile golden(test_file("tests/data/golden.safetensors"));
  const std::vector<std::uint8_t> images = golden.read_u8("images");
  const std::vector<std::uint8_t> labels = golden.read_u8("labels");
  const std::vector<float> want_logits = golden.read_f32("logits");
  const std::vector<float> want_probs = golden.read_f32("probs");
  const int n = static_cast<int>(labels.size());
  ASSERT_GE(n, 100);
  ASSERT_EQ(images.size(), static_cast<std::size_t>(n) * 784);
  ASSERT_EQ(want_logits.size(), static_cast<std::size_t>(n) * 10);

  // The images go through the same preprocessing as files do (28x28 grey: no resize).
  std::vector<float> input(static_cast<std::size_t>(n) * 784);
  InputSpec spec = net.input();
  spec.preprocessing.invert = InvertMode::No;  // the test set is as the model was trained on
  for (int i = 0; i < n; ++i) {
    Image img{28, 28, 1, std::vector<float>(784)};
    for (int j = 0; j < 784; ++j) img.pixels[j] = images[static_cast<std::size_t>(i) * 784 + j] / 255.0f;
    preprocess(img, spec, input.data() + static_cast<std::size_t>(i) * 784);
  }

  auto backend = make_cpu_backend(net, n);
  ASSERT_EQ(net.layers().back().kind, LayerKind::Softmax);
  std::vector<float> logits(want_logits.size(), std::nanf("")), probs(want_probs.size(), std::nanf(""));
  backend->forward(input.data(), n, logits.data(), net.layers().size() - 1);
  backend->forward(input.data(), n, probs.data());

  double max_logit_diff = 0.0, max_prob_diff = 0.0;
  int agree = 0, correct = 0;
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < 10; ++c) {
      const std::size_t k = static_cast<std::size_t>(i) * 10 + c;
      ASSERT_TRUE(std::isfinite(logits[k]) && std::isfinite(probs[k])) << "image " << i;
      max_logit_diff = std::max(max_logit_diff, std::fabs(static_cast<double>(logits[k]) - want_logits[k]));
      max_prob_diff = std::max(max_prob_diff, std::fabs(static_cast<double>(probs[k]) - want_probs[k]));
    }
    const float* row = logits.data() + i * 10;
    const float* want_row = want_logits.data() + i * 10;
    const std::ptrdiff_t ours = std::max_element(row, row + 10) - row;
    agree += ours == std::max_element(want_row, want_row + 10) - want_row;
    correct += ours == labels[static_cast<std::size_t>(i)];
  }
  RecordProperty("max_logit_diff", std::to_string(max_logit_diff));
  std::printf(
      "max |logit - PyTorch| = %.3g, max |prob - PyTorch| = %.3g over %d images; top-1 agrees on %d, "
      "correct on %d\n",
      max_logit_diff, max_prob_diff, n, agree, correct);
  EXPECT_LE(max_logit_diff, kLogitTolerance);
  // Softmax is 1/4-Lipschitz per logit pair in the worst case, so probabilities differ by less.
  EXPECT_LE(max_prob_diff, kLogitTolerance);
  EXPECT_EQ(agree, n);
}

}  // namespace
}  // namespace infer::test

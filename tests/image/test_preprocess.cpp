// Preprocessing as the model declares it (image/preprocess.h): each resize mode's geometry, the
// channel order and inversion, on pictures whose expected input is known without resampling: a
// constant region stays that constant (the filter's weights sum to 1), so only the columns within
// the filter's reach of an edge are left out of the comparisons.
#include <gtest/gtest.h>

#include <utility>

#include "image/preprocess.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

// Rounding of a resampled constant: a sum of a few float products whose weights sum to 1.
constexpr float kConstantTolerance = 1e-5f;
// stb_image_resize's Mitchell and Catmull-Rom filters (trim_fit, stretch) and PIL's triangle
// widened by the scale (crop) reach at most 2 source pixels either side at the scales used here (at
// most 2:1): an output pixel 3 away from an edge is untouched by it.
constexpr int kFilterReach = 3;

InputSpec spec_for(int channels, int h, int w, Preprocessing how) {
  InputSpec spec;
  spec.dims = {channels, h, w};
  spec.mean.assign(static_cast<std::size_t>(channels), 0.0f);
  spec.std.assign(static_cast<std::size_t>(channels), 1.0f);
  spec.preprocessing = how;
  return spec;
}

// A grey picture: 1 inside columns [x0, x1), 0 elsewhere.
Image band(int w, int h, int x0, int x1) {
  Image img{w, h, 1, std::vector<float>(static_cast<std::size_t>(w) * h, 0.0f)};
  for (int y = 0; y < h; ++y) {
    for (int x = x0; x < x1; ++x) img.pixels[static_cast<std::size_t>(y) * w + x] = 1.0f;
  }
  return img;
}

std::vector<float> run(const Image& img, const InputSpec& spec) {
  std::vector<float> out(spec.dims.size());
  preprocess(img, spec, out.data());
  return out;
}

TEST(Preprocess, CropTakesTheCentreAfterResizingTheShorterSide) {
  // 60x30, white in columns [15, 45): resized to 56x28 (shorter side 28, longer int(28 * 60 / 30)),
  // the centre 28 columns start at round((56 - 28) / 2) = 14, which is column 15 of the original:
  // the crop is all white.
  Preprocessing how;
  how.resize = ResizeMode::Crop;
  const std::vector<float> out = run(band(60, 30, 15, 45), spec_for(1, 28, 28, how));
  for (int y = 0; y < 28; ++y) {
    for (int x = kFilterReach; x < 28 - kFilterReach; ++x)
      EXPECT_NEAR(out[static_cast<std::size_t>(y * 28 + x)], 1.0f, kConstantTolerance) << x;
  }
  // Stretched instead, the black sides are in the picture: columns 0 to 6 and 21 to 27.
  how.resize = ResizeMode::Stretch;
  const std::vector<float> stretched = run(band(60, 30, 15, 45), spec_for(1, 28, 28, how));
  for (int y = 0; y < 28; ++y) {
    EXPECT_NEAR(stretched[static_cast<std::size_t>(y * 28)], 0.0f, kConstantTolerance);
    EXPECT_NEAR(stretched[static_cast<std::size_t>(y * 28 + 14)], 1.0f, kConstantTolerance);
    EXPECT_NEAR(stretched[static_cast<std::size_t>(y * 28 + 27)], 0.0f, kConstantTolerance);
  }
}

TEST(Preprocess, CropOfATallPictureAndALargerResizeSize) {
  // 20x80 (tall), resize_size 40: 40x160, crop 28x28 at left round(12 / 2) = 6, top 66: rows
  // 66..93 of 160, i.e. original rows 33..46.5 of 80. White rows [30, 50) cover them.
  Image img{20, 80, 1, std::vector<float>(1600, 0.0f)};
  for (int y = 30; y < 50; ++y) {
    for (int x = 0; x < 20; ++x) img.pixels[static_cast<std::size_t>(y * 20 + x)] = 1.0f;
  }
  Preprocessing how;
  how.resize = ResizeMode::Crop;
  how.resize_size = 40;
  const std::vector<float> out = run(img, spec_for(1, 28, 28, how));
  for (int y = kFilterReach; y < 28 - kFilterReach; ++y) {
    for (int x = 0; x < 28; ++x) EXPECT_NEAR(out[static_cast<std::size_t>(y * 28 + x)], 1.0f, kConstantTolerance) << y;
  }
}

TEST(Preprocess, CropOffsetRoundsHalfToEvenAsTorchvision) {
  // torchvision's CenterCrop: top = int(round((height - crop) / 2.0)), Python's round: half to even.
  // A picture whose shorter side is already resize_size is not resampled; each column (row) holds
  // its own 8-bit value, so the first one cropped says the offset.
  const int expected[] = {0, 0, 1, 2, 2, 2, 3, 4, 4};  // margin 0..8: round(0.5) = 0, round(2.5) = 2
  Preprocessing how;
  how.resize = ResizeMode::Crop;
  for (int margin = 0; margin <= 8; ++margin) {
    SCOPED_TRACE("margin " + std::to_string(margin));
    for (bool wide : {true, false}) {
      const int w = wide ? 28 + margin : 28, h = wide ? 28 : 28 + margin;
      Image img{w, h, 1, std::vector<float>(static_cast<std::size_t>(w) * h)};
      for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x)
          img.pixels[static_cast<std::size_t>(y) * w + x] = static_cast<float>(wide ? x : y) / 255.0f;
      }
      const std::vector<float> out = run(img, spec_for(1, 28, 28, how));
      for (int i = 0; i < 28; ++i) {
        const std::size_t at = wide ? static_cast<std::size_t>(i) : static_cast<std::size_t>(i) * 28;
        ASSERT_EQ(out[at], static_cast<float>(expected[margin] + i) / 255.0f) << (wide ? "column " : "row ") << i;
      }
    }
  }
}

TEST(Preprocess, CropResamplesAsPilsBilinearFilter) {
  // A picture 4 wide and 2 high, resize_size 1: resized to 2x1 (scale 2 both ways), cropped to its
  // first column (margin 1: round(0.5) = 0). The triangle is widened to reach 2 pixels either side
  // of the centre 1: weights 3/7, 3/7, 1/7 on columns 0, 1, 2, in 22-bit fixed point, rounded to
  // 8 bits: 0, 70, 140, 210 -> 50, and mirrored 210, 140, 70, 0 -> 160, as PIL's
  // Image.resize((2, 1), Image.BILINEAR) gives. The two equal rows average to themselves.
  Preprocessing how;
  how.resize = ResizeMode::Crop;
  how.resize_size = 1;
  for (const auto& [row, want] : {std::pair{std::vector<float>{0, 70, 140, 210}, 50.0f},
                                  std::pair{std::vector<float>{210, 140, 70, 0}, 160.0f}}) {
    Image img{4, 2, 1, {}};
    for (int y = 0; y < 2; ++y) {
      for (float v : row) img.pixels.push_back(v / 255.0f);
    }
    EXPECT_EQ(run(img, spec_for(1, 1, 1, how))[0], want / 255.0f) << want;
  }
}

TEST(Preprocess, BgrFeedsBlueFirstAndMeanStdApplyPerChannel) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const float r = rng.uniform(0, 1), g = rng.uniform(0, 1), b = rng.uniform(0, 1);
  Image img{6, 5, 3, {}};
  for (int i = 0; i < 30; ++i) img.pixels.insert(img.pixels.end(), {r, g, b});
  Preprocessing how;
  how.resize = ResizeMode::Stretch;  // crop quantises to 8 bits, as torchvision does
  how.channel_order = ChannelOrder::Bgr;
  InputSpec spec = spec_for(3, 5, 6, how);  // the picture's own size: no resampling
  spec.mean = {0.1f, 0.2f, 0.3f};
  spec.std = {0.5f, 0.25f, 2.0f};
  const std::vector<float> out = run(img, spec);
  EXPECT_FLOAT_EQ(out[0], (b - 0.1f) / 0.5f);
  EXPECT_FLOAT_EQ(out[30], (g - 0.2f) / 0.25f);
  EXPECT_FLOAT_EQ(out[60], (r - 0.3f) / 2.0f);
}

TEST(Preprocess, NothingIsInvertedUnlessTheModelSaysSo) {
  // A dark square on white, the picture the 224x224 RGB model got inverted.
  const Image img = band(28, 28, 10, 18);
  Image light = img;
  for (float& v : light.pixels) v = 1.0f - v;
  std::vector<float> out(784);
  EXPECT_FALSE(preprocess(light, spec_for(1, 28, 28, Preprocessing{}), out.data()).inverted);
  EXPECT_EQ(out[0], 1.0f);
  Preprocessing fashion;
  fashion.invert = InvertMode::Auto;
  EXPECT_TRUE(preprocess(light, spec_for(1, 28, 28, fashion), out.data()).inverted);
  EXPECT_EQ(out[0], 0.0f);
}

}  // namespace
}  // namespace infer::test

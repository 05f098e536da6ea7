// Image decode + preprocessing, as infer runs them on every input file: decode_image (format by
// content, the pixel limit, alpha/palette/16-bit conversion) then preprocess into the network input.
// The input's length picks the model's channel count (odd: 3, even: 1), so both paths are reached.
// Invariants: the only failure is InputError; pixels are in [0,1]; the network input is finite.
#include <cmath>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "infer/errors.h"
#include "image/load_image.h"
#include "image/preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int channels = size % 2 ? 3 : 1;
  // The shipped model's input (1x28x28, its mean and std); the same sizes for a 3-channel model.
  infer::InputSpec spec{{channels, 28, 28},
                        std::vector<float>(static_cast<std::size_t>(channels), 0.286f),
                        std::vector<float>(static_cast<std::size_t>(channels), 0.353f),
                        {},
                        {}};
  // Every resize mode and channel order, chosen by the input's size.
  const infer::ResizeMode modes[] = {infer::ResizeMode::TrimFit, infer::ResizeMode::Stretch, infer::ResizeMode::Crop};
  spec.preprocessing.resize = modes[size / 2 % 3];
  spec.preprocessing.channel_order = size / 6 % 2 ? infer::ChannelOrder::Bgr : infer::ChannelOrder::Rgb;
  spec.preprocessing.invert = infer::InvertMode::Auto;
  infer::Image image;
  try {
    image = infer::decode_image("fuzz-input", data, size, channels);
  } catch (const infer::InputError&) {
    return 0;
  }
  FUZZ_CHECK(image.width > 0 && image.height > 0 && image.channels == channels);
  FUZZ_CHECK(static_cast<long long>(image.width) * image.height <= infer::kMaxImagePixels);
  FUZZ_CHECK(image.pixels.size() == static_cast<std::size_t>(image.width) * image.height * channels);
  for (float v : image.pixels) FUZZ_CHECK(v >= 0.0f && v <= 1.0f);

  std::vector<float> input(spec.dims.size());
  infer::preprocess(image, spec, input.data());
  for (float v : input) FUZZ_CHECK(std::isfinite(v));
  return 0;
}

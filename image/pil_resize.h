// PIL's Image.resize(size, Image.BILINEAR) on 8-bit images, to the bit: the resize torchvision's
// Resize applies to a PIL image, so that the crop mode (preprocess.h) feeds a network the values it
// was trained on.
#pragma once

#include <cstdint>
#include <vector>

namespace infer {

// 8-bit pixels, interleaved: height rows of width pixels of `channels` values.
struct Image8 {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<std::uint8_t> pixels;
};

// The window of `window_w` x `window_h` pixels at (`left`, `top`) of `src` resized to `to_w` x
// `to_h` as PIL resizes an 8-bit image with its BILINEAR filter (libImaging/Resample.c):
//  - per axis, output pixel i is centred on source coordinate (i + 0.5) * scale, scale = in / out;
//    its weights are the triangle filter's, widened by the scale when shrinking (antialiasing: the
//    support is max(scale, 1) source pixels either side), over the source pixels whose centres it
//    reaches (cut at the borders), normalised to sum 1, then made 22-bit fixed point;
//  - the horizontal pass runs first, then the vertical one, each rounding half up and clamping to
//    8 bits; an axis whose size does not change is not resampled.
// Each channel is resampled alone. Computing only a window gives exactly the window of the whole
// result (the crop after the resize). Needs 1 <= to_w, to_h and a window inside the result.
Image8 pil_resize_bilinear(const Image8& src, int to_w, int to_h, int left, int top, int window_w, int window_h);

}  // namespace infer

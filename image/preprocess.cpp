#include "image/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <stb_image_resize.h>

#include "image/pil_resize.h"

namespace infer {
namespace {

// Pixels darker or lighter than the background by this much (in [0,1]) count as foreground when
// trimming. Lower and JPEG noise on a plain background becomes foreground.
constexpr float kForegroundThreshold = 0.12f;

float border_mean(const std::vector<float>& grey, int w, int h) {
  double sum = 0.0;
  int count = 0;
  for (int x = 0; x < w; ++x) {
    sum += grey[static_cast<std::size_t>(x)] + grey[static_cast<std::size_t>(h - 1) * w + x];
    count += 2;
  }
  for (int y = 1; y + 1 < h; ++y) {
    sum += grey[static_cast<std::size_t>(y) * w] + grey[static_cast<std::size_t>(y) * w + w - 1];
    count += 2;
  }
  return static_cast<float>(sum / count);
}

// Resizes interleaved float pixels (w x h x ch) to (to_w x to_h), whole.
std::vector<float> resized(const float* src, int w, int h, int stride_floats, int ch, int to_w, int to_h) {
  std::vector<float> out(static_cast<std::size_t>(to_w) * to_h * ch);
  if (!stbir_resize_float(src, w, h, stride_floats * static_cast<int>(sizeof(float)), out.data(), to_w, to_h, 0, ch)) {
    throw std::runtime_error("stbir_resize_float failed");
  }
  for (float& v : out) v = std::clamp(v, 0.0f, 1.0f);  // the resampling filter can overshoot
  return out;
}

// Fashion-MNIST's framing: the foreground's bounding box, its longer side fitted to the input,
// centred on the background.
std::vector<float> trim_fit(const std::vector<float>& pixels, const std::vector<float>& grey, int w, int h, int ch,
                            bool inverted, float background, int out_w, int out_h) {
  // Bounding box of the foreground; the whole image if nothing stands out.
  int x0 = w, y0 = h, x1 = -1, y1 = -1;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      float v = grey[static_cast<std::size_t>(y) * w + x];
      if (inverted) v = 1.0f - v;
      if (std::fabs(v - background) > kForegroundThreshold) {
        x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
      }
    }
  }
  if (x1 < 0) x0 = 0, y0 = 0, x1 = w - 1, y1 = h - 1;
  const int box_w = x1 - x0 + 1, box_h = y1 - y0 + 1;
  const double scale = std::min(static_cast<double>(out_w) / box_w, static_cast<double>(out_h) / box_h);
  const int fit_w = std::clamp(static_cast<int>(std::lround(box_w * scale)), 1, out_w);
  const int fit_h = std::clamp(static_cast<int>(std::lround(box_h * scale)), 1, out_h);
  const std::vector<float> scaled =
      resized(pixels.data() + (static_cast<std::size_t>(y0) * w + x0) * ch, box_w, box_h, w * ch, ch, fit_w, fit_h);
  std::vector<float> fitted(static_cast<std::size_t>(out_w) * out_h * ch, background);
  const int off_x = (out_w - fit_w) / 2, off_y = (out_h - fit_h) / 2;
  for (int y = 0; y < fit_h; ++y) {
    std::copy_n(scaled.begin() + static_cast<std::ptrdiff_t>(y) * fit_w * ch, fit_w * ch,
                fitted.begin() + (static_cast<std::ptrdiff_t>(y + off_y) * out_w + off_x) * ch);
  }
  return fitted;
}

// CenterCrop's offset: round(excess / 2) as Python rounds, half to even (2.5 -> 2, 1.5 -> 2).
int centre_offset(int excess) {
  const int half = excess / 2;
  return excess % 2 == 1 && half % 2 == 1 ? half + 1 : half;
}

// torchvision's evaluation transform on a PIL image: Resize(size) (PIL's bilinear resize of the
// 8-bit image), then CenterCrop((out_h, out_w)), then ToTensor (k / 255), on an image at least as
// large as the crop after resizing (resize_size >= max(out_h, out_w), checked when the model is
// read). Values not on the 8-bit grid (Netpbm with another maxval, alpha over white) are rounded to
// it first, as a PIL image holds them.
std::vector<float> resize_crop(const std::vector<float>& pixels, int w, int h, int ch, int resize_size, int out_w,
                               int out_h) {
  // Resize: the shorter side becomes `size`, the longer one int(size * long / short). Python
  // divides in double; a quotient that is not a whole number is at least 1/short from one, far more
  // than the division's rounding error, so truncating the exact quotient gives the same.
  int rw = resize_size, rh = resize_size;
  if (w < h) rh = static_cast<int>(static_cast<long long>(resize_size) * h / w);
  if (h < w) rw = static_cast<int>(static_cast<long long>(resize_size) * w / h);
  rw = std::max(rw, out_w), rh = std::max(rh, out_h);
  Image8 src{w, h, ch, std::vector<std::uint8_t>(pixels.size())};
  for (std::size_t i = 0; i < pixels.size(); ++i)
    src.pixels[i] = static_cast<std::uint8_t>(std::lround(std::clamp(pixels[i], 0.0f, 1.0f) * 255.0f));
  // Only the crop is resampled: PIL's output pixels are independent of each other.
  const Image8 crop =
      pil_resize_bilinear(src, rw, rh, centre_offset(rw - out_w), centre_offset(rh - out_h), out_w, out_h);
  std::vector<float> out(crop.pixels.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(crop.pixels[i]) / 255.0f;
  return out;
}

}  // namespace

PreprocessResult preprocess(const Image& image, const InputSpec& spec, float* out) {
  const int w = image.width, h = image.height, ch = image.channels;
  const int out_w = spec.dims.w, out_h = spec.dims.h;
  const Preprocessing& how = spec.preprocessing;
  if (ch != spec.dims.c) throw std::invalid_argument("image channels do not match the model input");

  // Grey view for the decisions (border brightness, foreground box).
  std::vector<float> grey(static_cast<std::size_t>(w) * h);
  for (std::size_t i = 0; i < grey.size(); ++i) {
    float s = 0.0f;
    for (int c = 0; c < ch; ++c) s += image.pixels[i * ch + c];
    grey[i] = s / static_cast<float>(ch);
  }
  const float border = border_mean(grey, w, h);
  PreprocessResult result;
  result.inverted = how.invert == InvertMode::Yes || (how.invert == InvertMode::Auto && border > 0.5f);
  const float background = result.inverted ? 1.0f - border : border;

  std::vector<float> pixels = image.pixels;
  if (result.inverted) {
    for (float& v : pixels) v = 1.0f - v;
  }

  std::vector<float> fitted;  // out_h x out_w x ch, interleaved
  if (w == out_w && h == out_h && how.resize != ResizeMode::Crop) {
    fitted = std::move(pixels);
  } else {
    switch (how.resize) {
      case ResizeMode::TrimFit:
        fitted = trim_fit(pixels, grey, w, h, ch, result.inverted, background, out_w, out_h);
        break;
      case ResizeMode::Stretch: fitted = resized(pixels.data(), w, h, w * ch, ch, out_w, out_h); break;
      case ResizeMode::Crop: {
        const int size = how.resize_size > 0 ? how.resize_size : std::max(out_w, out_h);
        fitted = resize_crop(pixels, w, h, ch, size, out_w, out_h);
        break;
      }
    }
  }

  // Interleaved HWC in [0,1] -> normalised CHW, blue first for a BGR model.
  const std::size_t plane = static_cast<std::size_t>(out_w) * out_h;
  const bool bgr = ch == 3 && how.channel_order == ChannelOrder::Bgr;
  for (int c = 0; c < ch; ++c) {
    const int from = bgr ? 2 - c : c;
    const float mean = spec.mean[static_cast<std::size_t>(c)];
    const float std = spec.std[static_cast<std::size_t>(c)];
    for (std::size_t i = 0; i < plane; ++i) out[c * plane + i] = (fitted[i * ch + from] - mean) / std;
  }
  return result;
}

}  // namespace infer

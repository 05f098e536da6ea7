#include "image/pil_resize.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace infer {
namespace {

// PIL's weights are 22-bit fixed point: 8 bits of result and 2 for overshoot fit in an int32.
constexpr int kPrecisionBits = 22;

// For each output position of one axis: the first source pixel read, how many, and their weights.
struct Taps {
  std::vector<int> first;
  std::vector<int> count;
  std::vector<std::int32_t> weights;  // `stride` per output position, the first `count` used
  int stride = 0;
};

double triangle(double x) {
  x = x < 0.0 ? -x : x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

// The taps of output positions [from, from + n) of an axis resized from in_size to out_size. Every
// double operation is PIL's, in PIL's order, so that the fixed-point weights are PIL's to the bit.
Taps taps_for(int in_size, int out_size, int from, int n) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;  // the triangle reaches 1, widened when shrinking
  const double inverse = 1.0 / filter_scale;
  Taps t;
  t.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<std::size_t>(n));
  t.count.resize(static_cast<std::size_t>(n));
  t.weights.assign(static_cast<std::size_t>(n) * t.stride, 0);
  std::vector<double> w(static_cast<std::size_t>(t.stride));
  for (int i = 0; i < n; ++i) {
    const double center = (from + i + 0.5) * scale;
    // PIL rounds the reach with a cast (towards zero), then clamps it to the image.
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int count = std::max(hi - lo, 0);
    double sum = 0.0;
    for (int k = 0; k < count; ++k) {
      w[static_cast<std::size_t>(k)] = triangle((static_cast<double>(lo + k) - center + 0.5) * inverse);
      sum += w[static_cast<std::size_t>(k)];
    }
    std::int32_t* fixed = t.weights.data() + static_cast<std::size_t>(i) * t.stride;
    for (int k = 0; k < count; ++k) {
      const double normalised = sum != 0.0 ? w[static_cast<std::size_t>(k)] / sum : w[static_cast<std::size_t>(k)];
      fixed[k] = static_cast<std::int32_t>(0.5 + normalised * (1 << kPrecisionBits));  // the triangle is >= 0
    }
    t.first[static_cast<std::size_t>(i)] = lo;
    t.count[static_cast<std::size_t>(i)] = count;
  }
  return t;
}

// One weighted sum back to 8 bits: round half up, clamp.
std::uint8_t to_8bit(std::int64_t sum) {
  const std::int64_t v = (sum + (std::int64_t{1} << (kPrecisionBits - 1))) >> kPrecisionBits;
  return static_cast<std::uint8_t>(std::clamp<std::int64_t>(v, 0, 255));
}

}  // namespace

Image8 pil_resize_bilinear(const Image8& src, int to_w, int to_h, int left, int top, int window_w, int window_h) {
  if (to_w < 1 || to_h < 1 || left < 0 || top < 0 || window_w < 1 || window_h < 1 || left + window_w > to_w ||
      top + window_h > to_h) {
    throw std::invalid_argument("pil_resize_bilinear: the window is not inside the resized image");
  }
  const int ch = src.channels;

  // Vertical taps first: they say which source rows the horizontal pass must produce.
  const bool vertical = to_h != src.height;
  Taps rows;
  int row0 = top, row1 = top + window_h;  // source rows needed, [row0, row1)
  if (vertical) {
    rows = taps_for(src.height, to_h, top, window_h);
    row0 = *std::min_element(rows.first.begin(), rows.first.end());
    row1 = 0;
    for (int i = 0; i < window_h; ++i) row1 = std::max(row1, rows.first[i] + rows.count[i]);
  }

  // Horizontal pass: rows [row0, row1) of the source, the window's columns, 8-bit.
  Image8 mid{window_w, row1 - row0, ch, {}};
  mid.pixels.resize(static_cast<std::size_t>(mid.width) * mid.height * ch);
  if (to_w != src.width) {
    const Taps cols = taps_for(src.width, to_w, left, window_w);
    for (int y = 0; y < mid.height; ++y) {
      const std::uint8_t* in = src.pixels.data() + static_cast<std::size_t>(y + row0) * src.width * ch;
      std::uint8_t* out = mid.pixels.data() + static_cast<std::size_t>(y) * window_w * ch;
      for (int x = 0; x < window_w; ++x) {
        const std::int32_t* w = cols.weights.data() + static_cast<std::size_t>(x) * cols.stride;
        const std::uint8_t* p = in + static_cast<std::size_t>(cols.first[x]) * ch;
        for (int c = 0; c < ch; ++c) {
          std::int64_t sum = 0;
          for (int k = 0; k < cols.count[x]; ++k) sum += std::int64_t{p[k * ch + c]} * w[k];
          out[x * ch + c] = to_8bit(sum);
        }
      }
    }
  } else {
    for (int y = 0; y < mid.height; ++y) {
      std::copy_n(src.pixels.begin() + (static_cast<std::ptrdiff_t>(y + row0) * src.width + left) * ch, window_w * ch,
                  mid.pixels.begin() + static_cast<std::ptrdiff_t>(y) * window_w * ch);
    }
  }
  if (!vertical) return mid;

  // Vertical pass over the horizontal pass's rows.
  Image8 out{window_w, window_h, ch, {}};
  out.pixels.resize(static_cast<std::size_t>(window_w) * window_h * ch);
  const std::size_t row_values = static_cast<std::size_t>(window_w) * ch;
  for (int y = 0; y < window_h; ++y) {
    const std::int32_t* w = rows.weights.data() + static_cast<std::size_t>(y) * rows.stride;
    const std::uint8_t* in = mid.pixels.data() + static_cast<std::size_t>(rows.first[y] - row0) * row_values;
    for (std::size_t v = 0; v < row_values; ++v) {
      std::int64_t sum = 0;
      for (int k = 0; k < rows.count[y]; ++k) sum += std::int64_t{in[k * row_values + v]} * w[k];
      out.pixels[static_cast<std::size_t>(y) * row_values + v] = to_8bit(sum);
    }
  }
  return out;
}

}  // namespace infer

// The ops that move values without arithmetic into a larger plane. Upsample: nearest neighbour by
// whole factors, each input row widened (every value repeated scale_w times) into the first of its
// scale_h output rows, which is then copied to the others. Pad: the plane inside a border of one
// value.
#include <algorithm>
#include <cstddef>

#include "backends/cpu/ops.h"

namespace infer::cpu {

void upsample_forward(const Layer& layer, const float* in, int n, float* out) {
  const UpsampleAttrs& a = layer.upsample();
  const Dims& d = layer.in;
  const auto out_w = static_cast<std::size_t>(d.w) * static_cast<std::size_t>(a.scale_w);
  const std::size_t planes = static_cast<std::size_t>(n) * static_cast<std::size_t>(d.c);
  for (std::size_t p = 0; p < planes; ++p) {
    for (int y = 0; y < d.h; ++y) {
      const float* row =
          in + (p * static_cast<std::size_t>(d.h) + static_cast<std::size_t>(y)) * static_cast<std::size_t>(d.w);
      float* first = out + (p * static_cast<std::size_t>(d.h) + static_cast<std::size_t>(y)) *
                               static_cast<std::size_t>(a.scale_h) * out_w;
      for (int x = 0; x < d.w; ++x)
        std::fill_n(first + static_cast<std::size_t>(x) * static_cast<std::size_t>(a.scale_w), a.scale_w, row[x]);
      for (int r = 1; r < a.scale_h; ++r) std::copy_n(first, out_w, first + static_cast<std::size_t>(r) * out_w);
    }
  }
}

void pad_forward(const Layer& layer, const float* in, int n, float* out) {
  const PadAttrs& a = layer.pad();
  const Dims& d = layer.in;
  const Dims& o = layer.out;
  const std::size_t planes = static_cast<std::size_t>(n) * static_cast<std::size_t>(d.c);
  const auto w = static_cast<std::size_t>(d.w), out_w = static_cast<std::size_t>(o.w);
  std::fill_n(out, static_cast<std::size_t>(n) * o.size(), a.value);
  for (std::size_t p = 0; p < planes; ++p) {
    for (int y = 0; y < d.h; ++y) {
      const float* row = in + (p * static_cast<std::size_t>(d.h) + static_cast<std::size_t>(y)) * w;
      std::copy_n(row, w,
                  out + (p * static_cast<std::size_t>(o.h) + static_cast<std::size_t>(y + a.top)) * out_w +
                      static_cast<std::size_t>(a.left));
    }
  }
}

}  // namespace infer::cpu

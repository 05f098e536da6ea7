// Bilinear resize (network.h, ResizeAttrs) by graph/resize_formula.h, the formula every backend
// computes: the taps of a row are found once per row, those of a column once per column and row.
#include <cstddef>

#include "backends/cpu/ops.h"
#include "graph/resize_formula.h"

namespace infer::cpu {

void resize_forward(const Layer& layer, const float* in, int n, float* out) {
  const ResizeAttrs& a = layer.resize();
  const int in_h = layer.in.h, in_w = layer.in.w, out_h = layer.out.h, out_w = layer.out.w;
  const std::size_t planes = static_cast<std::size_t>(n) * layer.in.c;
  const std::size_t in_plane = static_cast<std::size_t>(in_h) * in_w,
                    out_plane = static_cast<std::size_t>(out_h) * out_w;
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * in_plane;
    float* y = out + p * out_plane;
    for (int oy = 0; oy < out_h; ++oy) {
      const ResizeTap ty = resize_tap(oy, in_h, out_h, a.align_corners);
      const float* row0 = x + static_cast<std::size_t>(ty.i0) * in_w;
      const float* row1 = x + static_cast<std::size_t>(ty.i1) * in_w;
      for (int ox = 0; ox < out_w; ++ox) {
        const ResizeTap tx = resize_tap(ox, in_w, out_w, a.align_corners);
        y[static_cast<std::size_t>(oy) * out_w + ox] =
            resize_value(row0[tx.i0], row0[tx.i1], row1[tx.i0], row1[tx.i1], ty, tx);
      }
    }
  }
}

}  // namespace infer::cpu

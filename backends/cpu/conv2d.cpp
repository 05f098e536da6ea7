// Convolution as im2col + sgemm, per sample and group:
//   out[K/g, Hout*Wout] = weight[K/g, C/g*R*S] x col[C/g*R*S, Hout*Wout]   (+ bias[k])
#include <algorithm>

#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/ops.h"

namespace infer::cpu {
namespace {

bool is_pointwise(const Conv2dAttrs& a) {
  return a.kernel_h == 1 && a.kernel_w == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0;
}

// First output index o in [0, n) whose input index o*stride + offset is >= 0, and the end of the
// range where it is < limit: the part of a row that reads real input rather than padding.
void valid_range(int offset, int stride, int limit, int n, int& lo, int& hi) {
  lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  hi = limit - offset <= 0 ? 0 : (limit - offset + stride - 1) / stride;
  lo = std::min(lo, n);
  hi = std::clamp(hi, lo, n);
}

// col[(c*R + r)*S + s][oy*Wout + ox] = in[c][oy*stride - pad + r*dil][ox*stride - pad + s*dil] or 0.
// Each row is split once into padding | input | padding, so the inner loop has no bounds checks
// (and is a plain copy for stride 1): this loop cost as much as the sgemm before.
void im2col(const Conv2dAttrs& a, const float* in, int channels, int h, int w, int out_h, int out_w, float* col) {
  for (int c = 0; c < channels; ++c) {
    for (int r = 0; r < a.kernel_h; ++r) {
      for (int s = 0; s < a.kernel_w; ++s) {
        float* row = col + (static_cast<std::size_t>(c * a.kernel_h + r) * a.kernel_w + s) * out_h * out_w;
        const int x_offset = s * a.dilation_w - a.pad_w;
        int ox_lo = 0, ox_hi = 0;
        valid_range(x_offset, a.stride_w, w, out_w, ox_lo, ox_hi);
        for (int oy = 0; oy < out_h; ++oy) {
          const int iy = oy * a.stride_h - a.pad_h + r * a.dilation_h;
          float* dst = row + oy * out_w;
          if (iy < 0 || iy >= h) {
            std::fill(dst, dst + out_w, 0.0f);
            continue;
          }
          const float* src = in + (static_cast<std::size_t>(c) * h + iy) * w + x_offset;
          std::fill(dst, dst + ox_lo, 0.0f);
          if (a.stride_w == 1) {
            std::copy(src + ox_lo, src + ox_hi, dst + ox_lo);
          } else {
            for (int ox = ox_lo; ox < ox_hi; ++ox) dst[ox] = src[ox * a.stride_w];
          }
          std::fill(dst + ox_hi, dst + out_w, 0.0f);
        }
      }
    }
  }
}

}  // namespace

std::size_t conv2d_scratch_size(const Layer& layer) {
  const Conv2dAttrs& a = layer.conv();
  if (is_pointwise(a)) return 0;
  return static_cast<std::size_t>(layer.in.c / a.groups) * a.kernel_h * a.kernel_w * layer.out.h * layer.out.w;
}

void conv2d_forward(const Layer& layer, const float* in, int n, float* out, float* scratch) {
  const Conv2dAttrs& a = layer.conv();
  const int cg = layer.in.c / a.groups;
  const int kg = a.out_channels / a.groups;
  const int spatial = layer.out.h * layer.out.w;
  const int depth = cg * a.kernel_h * a.kernel_w;
  const bool pointwise = is_pointwise(a);
  for (int i = 0; i < n; ++i) {
    const float* x = in + static_cast<std::size_t>(i) * layer.in.size();
    float* y = out + static_cast<std::size_t>(i) * layer.out.size();
    for (int g = 0; g < a.groups; ++g) {
      const float* xg = x + static_cast<std::size_t>(g) * cg * layer.in.h * layer.in.w;
      const float* col = xg;
      if (!pointwise) {
        im2col(a, xg, cg, layer.in.h, layer.in.w, layer.out.h, layer.out.w, scratch);
        col = scratch;
      }
      const float* wg = layer.params.weight.data() + static_cast<std::size_t>(g) * kg * depth;
      float* yg = y + static_cast<std::size_t>(g) * kg * spatial;
      sgemm(Transpose::No, kg, spatial, depth, wg, depth, col, spatial, 0.0f, yg, spatial);
    }
    if (a.bias) {
      for (int k = 0; k < a.out_channels; ++k) {
        float* yk = y + static_cast<std::size_t>(k) * spatial;
        const float b = layer.params.bias[static_cast<std::size_t>(k)];
        for (int j = 0; j < spatial; ++j) yk[j] += b;
      }
    }
  }
}

}  // namespace infer::cpu

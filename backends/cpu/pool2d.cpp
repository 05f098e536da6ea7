// Max, average and global average pooling. Output size: floor or ceiling division (network.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/ops.h"

namespace infer::cpu {
namespace {

// Calls reduce(window of one output element) for every output element of every plane.
template <typename Reduce>
void for_each_window(const Layer& layer, const float* in, int n, float* out, Reduce reduce) {
  const Pool2dAttrs& a = layer.pool();
  const int h = layer.in.h, w = layer.in.w;
  const int planes = n * layer.in.c;
  for (int p = 0; p < planes; ++p) {
    const float* x = in + static_cast<std::size_t>(p) * h * w;
    float* y = out + static_cast<std::size_t>(p) * layer.out.h * layer.out.w;
    for (int oy = 0; oy < layer.out.h; ++oy) {
      for (int ox = 0; ox < layer.out.w; ++ox) {
        const int y0 = oy * a.stride_h - a.pad_h, x0 = ox * a.stride_w - a.pad_w;
        // Window clipped to the input; the full (padded) window size matters for averages.
        const int y_lo = std::max(y0, 0), y_hi = std::min(y0 + a.kernel_h, h);
        const int x_lo = std::max(x0, 0), x_hi = std::min(x0 + a.kernel_w, w);
        // The window clipped to the padded input: what average pooling counts with padding included
        // (a ceil_mode window's overhang beyond the padding never counts, as in PyTorch).
        const int padded =
            (std::min(y0 + a.kernel_h, h + a.pad_h) - y0) * (std::min(x0 + a.kernel_w, w + a.pad_w) - x0);
        y[oy * layer.out.w + ox] = reduce(x, w, y_lo, y_hi, x_lo, x_hi, padded);
      }
    }
  }
}

// The common 2x2, stride 2, unpadded max pooling without the general window bookkeeping.
bool maxpool_2x2(const Layer& layer, const float* in, int n, float* out) {
  const Pool2dAttrs& a = layer.pool();
  if (a.kernel_h != 2 || a.kernel_w != 2 || a.stride_h != 2 || a.stride_w != 2 || a.pad_h != 0 || a.pad_w != 0 ||
      layer.out.h != layer.in.h / 2 || layer.out.w != layer.in.w / 2) {  // a ceil_mode overhang: the general path
    return false;
  }
  const int w = layer.in.w, oh = layer.out.h, ow = layer.out.w;
  const std::size_t planes = static_cast<std::size_t>(n) * layer.in.c;
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * layer.in.h * w;
    float* y = out + p * oh * ow;
    for (int oy = 0; oy < oh; ++oy) {
      const float* r0 = x + 2 * oy * w;
      const float* r1 = r0 + w;
      for (int ox = 0; ox < ow; ++ox) {
        const float v[4] = {r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]};
        float m = v[0];
        for (float e : v) m = (std::isnan(e) || e > m) ? e : m;  // NaN propagates, as below
        y[oy * ow + ox] = m;
      }
    }
  }
  return true;
}

}  // namespace

void maxpool_forward(const Layer& layer, const float* in, int n, float* out) {
  if (maxpool_2x2(layer, in, n, out)) return;
  for_each_window(layer, in, n, out, [](const float* x, int w, int y_lo, int y_hi, int x_lo, int x_hi, int) {
    float m = -std::numeric_limits<float>::infinity();  // padding never wins, as in PyTorch
    for (int y = y_lo; y < y_hi; ++y) {
      for (int xx = x_lo; xx < x_hi; ++xx) {
        const float v = x[y * w + xx];
        if (std::isnan(v)) return v;  // NaN propagates, as in PyTorch and cuDNN (CUDNN_PROPAGATE_NAN)
        m = std::max(m, v);
      }
    }
    return m;
  });
}

void avgpool_forward(const Layer& layer, const float* in, int n, float* out) {
  const Pool2dAttrs& a = layer.pool();
  for_each_window(layer, in, n, out, [&a](const float* x, int w, int y_lo, int y_hi, int x_lo, int x_hi, int padded) {
    float sum = 0.0f;
    for (int y = y_lo; y < y_hi; ++y) {
      for (int xx = x_lo; xx < x_hi; ++xx) sum += x[y * w + xx];
    }
    // With padding counted, the divisor is the window clipped to the padded input (PyTorch).
    const int count = a.count_include_pad ? padded : (y_hi - y_lo) * (x_hi - x_lo);
    return sum / static_cast<float>(count);
  });
}

void adaptive_avgpool_forward(const Layer& layer, const float* in, int n, float* out) {
  const AdaptivePoolAttrs& a = layer.adaptive();
  const Dims& d = layer.in;
  const std::size_t planes = static_cast<std::size_t>(n) * d.c;
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * static_cast<std::size_t>(d.h) * d.w;
    float* y = out + p * static_cast<std::size_t>(a.out_h) * a.out_w;
    for (int i = 0; i < a.out_h; ++i) {
      const int y_lo = adaptive_begin(i, d.h, a.out_h), y_hi = adaptive_end(i, d.h, a.out_h);
      for (int j = 0; j < a.out_w; ++j) {
        const int x_lo = adaptive_begin(j, d.w, a.out_w), x_hi = adaptive_end(j, d.w, a.out_w);
        float sum = 0.0f;
        for (int r = y_lo; r < y_hi; ++r) {
          for (int c = x_lo; c < x_hi; ++c) sum += x[static_cast<std::size_t>(r) * d.w + c];
        }
        y[static_cast<std::size_t>(i) * a.out_w + j] = sum / static_cast<float>((y_hi - y_lo) * (x_hi - x_lo));
      }
    }
  }
}

void global_avgpool_forward(const Layer& layer, const float* in, int n, float* out) {
  const std::size_t spatial = static_cast<std::size_t>(layer.in.h) * layer.in.w;
  const std::size_t planes = static_cast<std::size_t>(n) * layer.in.c;
  for (std::size_t p = 0; p < planes; ++p) {
    double sum = 0.0;
    for (std::size_t j = 0; j < spatial; ++j) sum += in[p * spatial + j];
    out[p] = static_cast<float>(sum / static_cast<double>(spatial));
  }
}

}  // namespace infer::cpu

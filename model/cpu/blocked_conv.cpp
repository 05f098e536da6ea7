// Direct convolution on the channel-blocked layout (blocked.h) with AVX-512F.
//
// One tile computes WB consecutive output pixels of one output row for NB blocks of 16 output
// channels (WB x NB zmm accumulators, at most 14 x 2 = 28 of the 32 registers):
//   for each input block, r, s, and channel c of the block:
//     load NB weight vectors w[.., c, 16 outputs]; for each of the WB pixels broadcast x[c] and FMA.
// The input carries a halo as wide as the convolution's padding, so there are no bounds checks.
// Summation order: over input channels, then r, s; the result is within float32 rounding of the
// im2col + sgemm path (tests/test_cpu_ops.cpp compares both with a double-precision reference).

#include <algorithm>

#include "avx512.h"
#include "blocked.h"

namespace infer::cpu {
namespace {

constexpr int kMaxGroupBlocks = 2;  // output blocks per weight group (NB)

struct TileArgs {
  std::size_t in_plane;   // floats per input block
  int blocks;             // input blocks
  int kernel_h, kernel_w;
  int r_step;             // floats between kernel rows: dilation_h * padded row
  int s_step;             // floats between kernel columns: dilation_w * cb
  int x_step;             // floats between neighbouring output pixels: stride_w * cb
  std::size_t out_plane;  // floats per output block
  int out_step;           // floats between neighbouring output pixels (kLanes, or more when interleaved)
  bool relu;
};

// XSTEP > 0: the distance between neighbouring pixels' inputs is that compile-time constant (CB
// for stride 1, 256 for Winograd's interleaved tiles), so every input offset in the inner loop is
// an immediate displacement of the broadcast instead of a register per pixel. 0: t.x_step.
template <int WB, int NB, int CB, int XSTEP>
INFER_AVX512 void conv_tile(const TileArgs& t, const float* x, const float* w, const float* bias, float* y) {
  const int x_step = XSTEP > 0 ? XSTEP : t.x_step;
  __m512 acc[WB][NB];
  for (int nb = 0; nb < NB; ++nb) {
    const __m512 b = bias ? _mm512_loadu_ps(bias + nb * kLanes) : _mm512_setzero_ps();
    for (int j = 0; j < WB; ++j) acc[j][nb] = b;
  }
  for (int block = 0; block < t.blocks; ++block) {
    const float* xb = x + t.in_plane * block;
    for (int r = 0; r < t.kernel_h; ++r) {
      const float* xr = xb + static_cast<std::ptrdiff_t>(r) * t.r_step;
      for (int s = 0; s < t.kernel_w; ++s) {
        const float* xs = xr + s * t.s_step;
#pragma GCC unroll 16
        for (int c = 0; c < CB; ++c) {
          __m512 wv[NB];
          for (int nb = 0; nb < NB; ++nb) wv[nb] = _mm512_loadu_ps(w + nb * kLanes);
          w += NB * kLanes;
          for (int j = 0; j < WB; ++j) {
            const __m512 xv = _mm512_set1_ps(xs[j * x_step + c]);
            for (int nb = 0; nb < NB; ++nb) acc[j][nb] = _mm512_fmadd_ps(xv, wv[nb], acc[j][nb]);
          }
        }
      }
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int nb = 0; nb < NB; ++nb) {
    for (int j = 0; j < WB; ++j) {
      // max(0, v) returns its second operand when either is NaN: NaN propagates through the ReLU.
      const __m512 v = t.relu ? _mm512_max_ps(zero, acc[j][nb]) : acc[j][nb];
      _mm512_storeu_ps(y + t.out_plane * nb + j * t.out_step, v);
    }
  }
}

// One output row of one weight group, in tiles of 14, 8, 4, 2 and 1 pixels (7 for a remainder
// of 7: a 14 x 14 image in Winograd tiles is 49 = 28 + 14 + 7).
template <int NB, int CB, int XSTEP>
INFER_AVX512 void conv_row(const TileArgs& t, const float* x, const float* w, const float* bias, float* y, int width) {
  int ox = 0;
  for (; width - ox >= 14; ox += 14) conv_tile<14, NB, CB, XSTEP>(t, x + ox * t.x_step, w, bias, y + ox * t.out_step);
  if (width - ox == 7) { conv_tile<7, NB, CB, XSTEP>(t, x + ox * t.x_step, w, bias, y + ox * t.out_step); ox += 7; }
  if (width - ox >= 8) { conv_tile<8, NB, CB, XSTEP>(t, x + ox * t.x_step, w, bias, y + ox * t.out_step); ox += 8; }
  if (width - ox >= 4) { conv_tile<4, NB, CB, XSTEP>(t, x + ox * t.x_step, w, bias, y + ox * t.out_step); ox += 4; }
  if (width - ox >= 2) { conv_tile<2, NB, CB, XSTEP>(t, x + ox * t.x_step, w, bias, y + ox * t.out_step); ox += 2; }
  if (width - ox >= 1) conv_tile<1, NB, CB, XSTEP>(t, x + ox * t.x_step, w, bias, y + ox * t.out_step);
}

using RowFn = void (*)(const TileArgs&, const float*, const float*, const float*, float*, int);

RowFn row_function(int nb, int cb, int x_step) {
  if (cb == 1) {
    if (x_step == 1) return nb == 2 ? conv_row<2, 1, 1> : conv_row<1, 1, 1>;
    return nb == 2 ? conv_row<2, 1, 0> : conv_row<1, 1, 0>;
  }
  if (x_step == kLanes) return nb == 2 ? conv_row<2, kLanes, kLanes> : conv_row<1, kLanes, kLanes>;
  if (x_step == kWinogradStep) return nb == 2 ? conv_row<2, kLanes, kWinogradStep> : conv_row<1, kLanes, kWinogradStep>;
  return nb == 2 ? conv_row<2, kLanes, 0> : conv_row<1, kLanes, 0>;
}

}  // namespace

bool blocked_kernels_supported() {
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported;
}

PackedConv pack_conv(const Conv2dAttrs& attrs, int in_channels, int cb, const std::vector<float>& weight,
                     const std::vector<float>& bias, bool relu) {
  PackedConv p;
  p.attrs = attrs;
  p.in_channels = in_channels;
  p.relu = relu;
  const int k = attrs.out_channels, r_n = attrs.kernel_h, s_n = attrs.kernel_w;
  const int out_blocks = (k + kLanes - 1) / kLanes;
  const int in_blocks = (in_channels + cb - 1) / cb;
  const std::size_t per_block = static_cast<std::size_t>(in_blocks) * r_n * s_n * cb * kLanes;  // one output block
  p.weight.assign(per_block * out_blocks, 0.0f);
  p.bias.assign(static_cast<std::size_t>(out_blocks) * kLanes, 0.0f);
  for (int kb0 = 0; kb0 < out_blocks; kb0 += kMaxGroupBlocks) {
    const int nb_n = std::min(kMaxGroupBlocks, out_blocks - kb0);
    float* group = p.weight.data() + per_block * kb0;
    std::size_t i = 0;  // walks the group in the order conv_tile reads it
    for (int block = 0; block < in_blocks; ++block) {
      for (int r = 0; r < r_n; ++r) {
        for (int s = 0; s < s_n; ++s) {
          for (int c = 0; c < cb; ++c) {
            const int ci = block * cb + c;
            for (int nb = 0; nb < nb_n; ++nb) {
              for (int lane = 0; lane < kLanes; ++lane, ++i) {
                const int ko = (kb0 + nb) * kLanes + lane;
                if (ci < in_channels && ko < k) {
                  group[i] = weight[((static_cast<std::size_t>(ko) * in_channels + ci) * r_n + r) * s_n + s];
                }
              }
            }
          }
        }
      }
    }
  }
  for (int ko = 0; ko < k && !bias.empty(); ++ko) p.bias[static_cast<std::size_t>(ko)] = bias[static_cast<std::size_t>(ko)];
  return p;
}

void conv_blocked(const PackedConv& conv, const BlockedShape& in_shape, const float* in, const BlockedShape& out_shape,
                  float* out) {
  const Conv2dAttrs& a = conv.attrs;
  TileArgs t{};
  t.in_plane = in_shape.plane();
  t.blocks = in_shape.blocks;
  t.kernel_h = a.kernel_h;
  t.kernel_w = a.kernel_w;
  t.r_step = a.dilation_h * in_shape.row();
  t.s_step = a.dilation_w * in_shape.cb;
  t.x_step = a.stride_w * in_shape.cb;
  t.out_plane = out_shape.plane();
  t.out_step = kLanes;
  t.relu = conv.relu;
  const std::size_t per_block = static_cast<std::size_t>(in_shape.blocks) * a.kernel_h * a.kernel_w * in_shape.cb * kLanes;
  for (int kb0 = 0; kb0 < out_shape.blocks; kb0 += kMaxGroupBlocks) {
    const int nb = std::min(kMaxGroupBlocks, out_shape.blocks - kb0);
    const RowFn row = row_function(nb, in_shape.cb, t.x_step);
    const float* w = conv.weight.data() + per_block * kb0;
    const float* bias = conv.bias.data() + static_cast<std::size_t>(kb0) * kLanes;
    for (int oy = 0; oy < out_shape.h; ++oy) {
      // Top-left input of the window of output (oy, 0); the halo covers the padding.
      const float* x = in + in_shape.at(0, oy * a.stride_h - a.pad_h, -a.pad_w);
      row(t, x, w, bias, out + out_shape.at(kb0, oy, 0), out_shape.w);
    }
  }
}

void pointwise_blocked(const PackedConv& conv, const float* in, std::size_t in_plane, int in_step, int pixels,
                       float* out, std::size_t out_plane, int out_step) {
  TileArgs t{};
  t.in_plane = in_plane;
  t.blocks = (conv.in_channels + kLanes - 1) / kLanes;
  t.kernel_h = t.kernel_w = 1;
  t.x_step = in_step;
  t.out_plane = out_plane;
  t.out_step = out_step;
  t.relu = conv.relu;
  const int out_blocks = (conv.attrs.out_channels + kLanes - 1) / kLanes;
  const std::size_t per_block = static_cast<std::size_t>(t.blocks) * kLanes * kLanes;
  for (int kb0 = 0; kb0 < out_blocks; kb0 += kMaxGroupBlocks) {
    const int nb = std::min(kMaxGroupBlocks, out_blocks - kb0);
    // The Winograd products have no bias (it is added after the output transform): no loads for it.
    const float* bias = conv.attrs.bias ? conv.bias.data() + static_cast<std::size_t>(kb0) * kLanes : nullptr;
    row_function(nb, kLanes, in_step)(t, in, conv.weight.data() + per_block * kb0, bias,
                                   out + out_plane * kb0, pixels);
  }
}

}  // namespace infer::cpu

// The rounding bound of a convolution computed by oneDNN's Winograd (cpu_backend.h,
// winograd_shape()), for tests/support/reference.h. oneDNN has two f32 variants on AVX-512 and picks one
// per primitive: F(4x4, 3x3) (jit_wino_4x3; seen for 3 or more samples) and F(2x2, 3x3)
// (jit_fp32_wino_2x3; seen for 1 and 2), so the reference allows either: the larger bound.
//
// Winograd F(m x m, 3x3) computes each m x m output tile from an alpha x alpha input tile d_c
// (alpha = m + 2) of every input channel c and the 3x3 filter g_c as
//   Y = A^T [ sum_c (G g_c G^T) .* (B^T d_c B) ] A
// which equals the convolution in exact arithmetic (CpuWinograd.TransformsComputeTheConvolution
// checks both variants in double). In float, each intermediate is rounded; with |.| taken
// elementwise, every rounding error is at most u times a partial value, and every partial value
// is bounded by the same expression over magnitudes,
//   W = |A^T| [ sum_c (|G| |g_c| |G^T|) .* (|B^T| |d_c| |B|) ] |A|
// so the error is within n u W, n the most roundings on one path (first order):
//                     F(4x4)  F(2x2)
//   input transform     8       2     two 1-D passes: at most 4 (two multiply-adds, unfused) / 1
//   filter transform   13       7     two passes of at most 6 / 3 operations (F(4x4)'s constants
//                                     are not exact in float), plus 1 for a folded batch-norm
//   product             1       1
//   channel sum         C       C     any order
//   output transform    8       4     two passes of at most 4 / 2
//   bias                1       1     added to the result: u (W + |bias|) with the rest
// n = C + 31 and C + 15. W is taken over the reference's |d|, as the direct rule takes sum|w x|:
// the input's own error E (carried from earlier layers) passes through the exact linear map as
// sum|w| E, and its effect on the rounding (u E) is second order. (Taking |d| + E instead made
// the bound of deep networks grow with the worst-case E: ResNet-18's reached 7e17.)
//
// The matrices are oneDNN's. F(4x4): points 0, +-0.625, +-1.5 and infinity, from its benchdnn
// reference for this kernel (tests/benchdnn/conv/ref_wino.cpp, trans_I/W/O_4x4_3x3). F(2x2): the
// standard points 0, +-1, infinity; B^T and A^T read off the kernel's source and destination
// transforms (src/cpu/x64/jit_avx512_core_f32_wino_conv_2x3.cpp), G the one they imply.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "graph/network.h"

namespace infer::test::winograd {

// One Winograd variant F(m x m, 3x3): alpha = m + 2 points per side; B^T (alpha x alpha), G
// (alpha x 3) and A^T (m x alpha), row-major; `roundings_beyond_channels`: the most roundings on
// one path besides the C of the channel sum (the table at the top of this file).
struct Variant {
  const char* name;
  int m, alpha;
  std::vector<double> bt, g, at;
  int roundings_beyond_channels;
};

// oneDNN's jit_wino_4x3 (programs of 3 or more samples, where it chooses it).
inline const Variant& f4x4() {
  static const Variant v{
      "F(4x4,3x3)",
      4,
      6,
      {0.87890625, 0,         -2.640625, 0,      1, 0, 0, -1.40625,   -2.25,     0.625,     1, 0,
       0,          1.40625,   -2.25,     -0.625, 1, 0, 0, -0.5859375, -0.390625, 1.5,       1, 0,
       0,          0.5859375, -0.390625, -1.5,   1, 0, 0, 0.87890625, 0,         -2.640625, 0, 1},
      {1.13777777777778, 0, 0, -0.688403361344538, -0.430252100840336, -0.26890756302521, -0.688403361344538,
       0.430252100840336, -0.26890756302521, 0.119514472455649, 0.179271708683473, 0.26890756302521, 0.119514472455649,
       -0.179271708683473, 0.26890756302521, 0, 0, 1},
      {1, 1,        1,        1,    1,    0, 0, 0.625,       -0.625,       1.5,   -1.5,   0,
       0, 0.390625, 0.390625, 2.25, 2.25, 0, 0, 0.244140625, -0.244140625, 3.375, -3.375, 1},
      31};
  return v;
}

// oneDNN's jit_fp32_wino_2x3 (what it chooses for 1 or 2 samples): points 0, +-1, infinity.
inline const Variant& f2x2() {
  static const Variant v{"F(2x2,3x3)",
                         2,
                         4,
                         {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1},
                         {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1},
                         {1, 1, 1, 0, 0, 1, -1, -1},
                         15};
  return v;
}

inline std::vector<const Variant*> variants() { return {&f4x4(), &f2x2()}; }

// The most roundings on one path for C input channels.
inline double roundings(const Variant& v, int channels) { return channels + v.roundings_beyond_channels; }

using Tile = std::vector<double>;  // alpha x alpha, row-major

// G g G^T of a 3x3 filter (row-major); magnitude: |G| |g| |G^T|.
inline Tile filter_transform(const Variant& v, const double* g, bool magnitude) {
  auto f = [&](double x) { return magnitude ? std::fabs(x) : x; };
  Tile out(static_cast<std::size_t>(v.alpha * v.alpha), 0.0);
  for (int i = 0; i < v.alpha; ++i)
    for (int j = 0; j < v.alpha; ++j) {
      double s = 0.0;
      for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 3; ++q) s += f(v.g[i * 3 + p]) * f(g[p * 3 + q]) * f(v.g[j * 3 + q]);
      out[static_cast<std::size_t>(i * v.alpha + j)] = s;
    }
  return out;
}

// B^T d B of an alpha x alpha input tile; magnitude: |B^T| |d| |B|.
inline Tile input_transform(const Variant& v, const Tile& d, bool magnitude) {
  auto f = [&](double x) { return magnitude ? std::fabs(x) : x; };
  const int a = v.alpha;
  Tile out(static_cast<std::size_t>(a * a), 0.0);
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < a; ++j) {
      double s = 0.0;
      for (int p = 0; p < a; ++p)
        for (int q = 0; q < a; ++q)
          s += f(v.bt[i * a + p]) * f(d[static_cast<std::size_t>(p * a + q)]) * f(v.bt[j * a + q]);
      out[static_cast<std::size_t>(i * a + j)] = s;
    }
  return out;
}

// (A^T t A) at output (r, s) of the m x m tile; magnitude: |A^T| t |A|.
inline double output_transform(const Variant& v, const Tile& t, int r, int s, bool magnitude) {
  auto f = [&](double x) { return magnitude ? std::fabs(x) : x; };
  const int a = v.alpha;
  double y = 0.0;
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < a; ++j) y += f(v.at[r * a + i]) * t[static_cast<std::size_t>(i * a + j)] * f(v.at[s * a + j]);
  return y;
}

// W for every output of one sample of a winograd_shape() convolution `l` (C x H x W, NCHW) by
// variant v, with the input's magnitude |x| given per element of that sample. Tiles start at
// output (0, 0); the input tile of output tile (ty, tx) starts at (m ty - pad_h, m tx - pad_w),
// zeros outside the image.
inline std::vector<double> magnitude(const Variant& v, const Layer& l, const std::vector<double>& input_magnitude) {
  const Conv2dAttrs& a = l.conv();
  const Dims& di = l.in;
  const Dims& d = l.out;
  const int m = v.m, alpha = v.alpha;
  std::vector<Tile> filters(static_cast<std::size_t>(d.c) * di.c);
  for (int k = 0; k < d.c; ++k)
    for (int c = 0; c < di.c; ++c) {
      double g[9];
      for (int t = 0; t < 9; ++t) g[t] = l.params.weight[(static_cast<std::size_t>(k) * di.c + c) * 9 + t];
      filters[static_cast<std::size_t>(k) * di.c + c] = filter_transform(v, g, true);
    }
  std::vector<double> out(d.size(), 0.0);
  std::vector<Tile> tiles(static_cast<std::size_t>(di.c));
  for (int ty = 0; ty * m < d.h; ++ty)
    for (int tx = 0; tx * m < d.w; ++tx) {
      for (int c = 0; c < di.c; ++c) {
        Tile x(static_cast<std::size_t>(alpha * alpha), 0.0);
        for (int p = 0; p < alpha; ++p)
          for (int q = 0; q < alpha; ++q) {
            const int iy = ty * m - a.pad_h + p, ix = tx * m - a.pad_w + q;
            if (iy >= 0 && iy < di.h && ix >= 0 && ix < di.w)
              x[static_cast<std::size_t>(p * alpha + q)] =
                  input_magnitude[(static_cast<std::size_t>(c) * di.h + iy) * di.w + ix];
          }
        tiles[static_cast<std::size_t>(c)] = input_transform(v, x, true);
      }
      for (int k = 0; k < d.c; ++k) {
        Tile sum(static_cast<std::size_t>(alpha * alpha), 0.0);
        for (int c = 0; c < di.c; ++c) {
          const Tile& u = filters[static_cast<std::size_t>(k) * di.c + c];
          const Tile& t = tiles[static_cast<std::size_t>(c)];
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += u[i] * t[i];
        }
        for (int r = 0; r < m && ty * m + r < d.h; ++r)
          for (int s = 0; s < m && tx * m + s < d.w; ++s)
            out[(static_cast<std::size_t>(k) * d.h + ty * m + r) * d.w + tx * m + s] =
                output_transform(v, sum, r, s, true);
      }
    }
  return out;
}

}  // namespace infer::test::winograd

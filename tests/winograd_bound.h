// The rounding bound of a convolution computed by oneDNN's Winograd F(4x4, 3x3) (cpu_backend.h,
// winograd_shape()), for tests/reference.h.
//
// Winograd computes each 4x4 output tile from a 6x6 input tile d_c of every input channel c and
// the 3x3 filter g_c as
//   Y = A^T [ sum_c (G g_c G^T) .* (B^T d_c B) ] A
// which equals the convolution in exact arithmetic (CpuWinograd.TransformsComputeTheConvolution
// checks it in double). In float, each intermediate is rounded; with |.| taken elementwise, every
// rounding error is at most u times a partial value, and every partial value is bounded by the
// same expression over magnitudes,
//   W = |A^T| [ sum_c (|G| |g_c| |G^T|) .* (|B^T| |d_c| |B|) ] |A|
// so the error is within n u W, n the most roundings on one path (first order):
//   input transform  8   two 1-D passes, each at most 4 (two multiply-adds, unfused)
//   filter transform 13  two passes of at most 6 (5 operations and the constant, which is not
//                        exact in float), plus 1 for a folded batch-norm's scaled weights
//   product          1
//   channel sum      C   any order
//   output transform 8   two passes of at most 4
//   bias             1   added to the result: u (W + |bias|) with the rest
// n = C + 31. The input's own error E (carried from earlier layers) is accounted for as |d| + E
// inside W, an upper bound for the values oneDNN transforms.
//
// The matrices are oneDNN's (points 0, +-0.625, +-1.5 and infinity; its benchdnn reference for
// this kernel, tests/benchdnn/conv/ref_wino.cpp, trans_I/W/O_4x4_3x3). Tiles start at output
// (0, 0); the input tile of output tile (ty, tx) starts at (4 ty - pad_h, 4 tx - pad_w), zeros
// outside the image.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "model/network.h"

namespace infer::test::winograd {

using Matrix6 = std::array<std::array<double, 6>, 6>;

// B^T (6x6), G (6x3), A^T (4x6), signed.
inline constexpr double kBt[6][6] = {{0.87890625, 0, -2.640625, 0, 1, 0},   {0, -1.40625, -2.25, 0.625, 1, 0},
                                     {0, 1.40625, -2.25, -0.625, 1, 0},     {0, -0.5859375, -0.390625, 1.5, 1, 0},
                                     {0, 0.5859375, -0.390625, -1.5, 1, 0}, {0, 0.87890625, 0, -2.640625, 0, 1}};
inline constexpr double kG[6][3] = {{1.13777777777778, 0, 0},
                                    {-0.688403361344538, -0.430252100840336, -0.26890756302521},
                                    {-0.688403361344538, 0.430252100840336, -0.26890756302521},
                                    {0.119514472455649, 0.179271708683473, 0.26890756302521},
                                    {0.119514472455649, -0.179271708683473, 0.26890756302521},
                                    {0, 0, 1}};
inline constexpr double kAt[4][6] = {{1, 1, 1, 1, 1, 0},
                                     {0, 0.625, -0.625, 1.5, -1.5, 0},
                                     {0, 0.390625, 0.390625, 2.25, 2.25, 0},
                                     {0, 0.244140625, -0.244140625, 3.375, -3.375, 1}};

// The most roundings on one path for C input channels (the table above).
inline double roundings(int channels) { return channels + 31.0; }

// G g G^T of a 3x3 filter; magnitude: |G| |g| |G^T|.
inline Matrix6 filter_transform(const double g[3][3], bool magnitude) {
  auto f = [&](double v) { return magnitude ? std::fabs(v) : v; };
  Matrix6 out{};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      double s = 0.0;
      for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 3; ++q) s += f(kG[i][p]) * f(g[p][q]) * f(kG[j][q]);
      out[i][j] = s;
    }
  return out;
}

// B^T d B of a 6x6 input tile; magnitude: |B^T| |d| |B|.
inline Matrix6 input_transform(const Matrix6& d, bool magnitude) {
  auto f = [&](double v) { return magnitude ? std::fabs(v) : v; };
  Matrix6 out{};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      double s = 0.0;
      for (int p = 0; p < 6; ++p)
        for (int q = 0; q < 6; ++q) s += f(kBt[i][p]) * f(d[p][q]) * f(kBt[j][q]);
      out[i][j] = s;
    }
  return out;
}

// A^T m A at output (r, s) of the tile.
inline double output_transform(const Matrix6& m, int r, int s, bool magnitude) {
  auto f = [&](double v) { return magnitude ? std::fabs(v) : v; };
  double y = 0.0;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) y += f(kAt[r][i]) * m[i][j] * f(kAt[s][j]);
  return y;
}

// W for every output of sample b of a winograd_shape() convolution `l` (C x H x W, NCHW), with
// the input's magnitude |x| + E given per element of that sample (C_in x H_in x W_in).
inline std::vector<double> magnitude(const Layer& l, const std::vector<double>& input_magnitude) {
  const Conv2dAttrs& a = l.conv();
  const Dims& di = l.in;
  const Dims& d = l.out;
  std::vector<Matrix6> filters(static_cast<std::size_t>(d.c) * di.c);
  for (int k = 0; k < d.c; ++k)
    for (int c = 0; c < di.c; ++c) {
      double g[3][3];
      for (int p = 0; p < 3; ++p)
        for (int q = 0; q < 3; ++q) g[p][q] = l.params.weight[((static_cast<std::size_t>(k) * di.c + c) * 3 + p) * 3 + q];
      filters[static_cast<std::size_t>(k) * di.c + c] = filter_transform(g, true);
    }
  std::vector<double> out(d.size(), 0.0);
  std::vector<Matrix6> tiles(static_cast<std::size_t>(di.c));
  for (int ty = 0; ty * 4 < d.h; ++ty)
    for (int tx = 0; tx * 4 < d.w; ++tx) {
      for (int c = 0; c < di.c; ++c) {
        Matrix6 x{};
        for (int p = 0; p < 6; ++p)
          for (int q = 0; q < 6; ++q) {
            const int iy = ty * 4 - a.pad_h + p, ix = tx * 4 - a.pad_w + q;
            if (iy >= 0 && iy < di.h && ix >= 0 && ix < di.w)
              x[p][q] = input_magnitude[(static_cast<std::size_t>(c) * di.h + iy) * di.w + ix];
          }
        tiles[static_cast<std::size_t>(c)] = input_transform(x, true);
      }
      for (int k = 0; k < d.c; ++k) {
        Matrix6 m{};
        for (int c = 0; c < di.c; ++c) {
          const Matrix6& u = filters[static_cast<std::size_t>(k) * di.c + c];
          const Matrix6& v = tiles[static_cast<std::size_t>(c)];
          for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 6; ++j) m[i][j] += u[i][j] * v[i][j];
        }
        for (int r = 0; r < 4 && ty * 4 + r < d.h; ++r)
          for (int s = 0; s < 4 && tx * 4 + s < d.w; ++s)
            out[(static_cast<std::size_t>(k) * d.h + ty * 4 + r) * d.w + tx * 4 + s] = output_transform(m, r, s, true);
      }
    }
  return out;
}

}  // namespace infer::test::winograd

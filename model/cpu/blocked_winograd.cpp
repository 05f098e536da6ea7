// 3x3, stride-1 convolution by Winograd's minimal filtering F(2x2, 3x3) on the channel-blocked
// layout (blocked.h): 16 multiplications per 2x2 output tile and channel pair instead of 36.
//
//   Y = A^T [ sum_c (G g_c G^T) .* (B^T d_c B) ] A        (Lavin & Gray, 2015)
//
//   B^T = [1  0 -1  0]    G = [ 1    0    0 ]    A^T = [1 1  1  0]
//         [0  1  1  0]        [1/2  1/2  1/2]          [0 1 -1 -1]
//         [0 -1  1  0]        [1/2 -1/2  1/2]
//         [0  1  0 -1]        [ 0    0    1 ]
//
// Tiles are processed 28 at a time: the input transform writes V[C/16][28][16][16], the sum over
// channels is 16 matrix products [28 x C] x [C x K], run by the direct kernel as 1x1 convolutions
// (pointwise_blocked: tiles play the part of pixels), and the output transform adds the bias,
// applies the ReLU and writes the 2x2 outputs that lie inside the image. The input buffer needs a
// halo of padding + 1: the last tile of an odd-sized output reads one row and column further.
//
// Rounding: the transforms add a few roundings per term to the sum over channels (the tests
// derive the bound from the absolute values of the transformed terms).

#include <algorithm>

#include "avx512.h"
#include "blocked.h"

namespace infer::cpu {
namespace {

constexpr int kTiles = 28;  // tiles per matrix product: two of the direct kernel's widest tiles

// One 4x4 block of vectors: v[i][j].
struct Block4 {
  __m512 v[4][4];
};

INFER_AVX512 void input_transform(const float* const rows[4], Block4& out) {
  __m512 t[4][4];  // B^T d
  for (int j = 0; j < 4; ++j) {
    const __m512 d0 = _mm512_loadu_ps(rows[0] + j * kLanes), d1 = _mm512_loadu_ps(rows[1] + j * kLanes);
    const __m512 d2 = _mm512_loadu_ps(rows[2] + j * kLanes), d3 = _mm512_loadu_ps(rows[3] + j * kLanes);
    t[0][j] = _mm512_sub_ps(d0, d2);
    t[1][j] = _mm512_add_ps(d1, d2);
    t[2][j] = _mm512_sub_ps(d2, d1);
    t[3][j] = _mm512_sub_ps(d1, d3);
  }
  for (int i = 0; i < 4; ++i) {  // (B^T d) B
    out.v[i][0] = _mm512_sub_ps(t[i][0], t[i][2]);
    out.v[i][1] = _mm512_add_ps(t[i][1], t[i][2]);
    out.v[i][2] = _mm512_sub_ps(t[i][2], t[i][1]);
    out.v[i][3] = _mm512_sub_ps(t[i][1], t[i][3]);
  }
}

}  // namespace

// Below 16 input channels (the network's first layer, say) the transforms cost more than they save.
bool winograd_applicable(const Conv2dAttrs& a, int in_channels) {
  return a.kernel_h == 3 && a.kernel_w == 3 && a.stride_h == 1 && a.stride_w == 1 && a.dilation_h == 1 &&
         a.dilation_w == 1 && a.groups == 1 && in_channels >= kLanes;
}

WinogradConv pack_winograd(const Conv2dAttrs& attrs, int in_channels, const std::vector<float>& weight,
                           const std::vector<float>& bias, bool relu) {
  static const double g_matrix[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  WinogradConv w;
  w.attrs = attrs;
  w.in_channels = in_channels;
  w.relu = relu;
  const int k = attrs.out_channels;
  const int padded = (in_channels + kLanes - 1) / kLanes * kLanes;  // the input buffer's channels, zeros past C
  Conv2dAttrs pointwise;
  pointwise.out_channels = k;
  pointwise.bias = false;
  std::vector<std::vector<float>> u(16, std::vector<float>(static_cast<std::size_t>(k) * padded, 0.0f));
  for (int ko = 0; ko < k; ++ko) {
    for (int c = 0; c < in_channels; ++c) {
      const float* g = weight.data() + (static_cast<std::size_t>(ko) * in_channels + c) * 9;
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          double sum = 0.0;  // (G g G^T)[i][j], in double, rounded once
          for (int r = 0; r < 3; ++r) {
            for (int s = 0; s < 3; ++s) sum += g_matrix[i][r] * g[r * 3 + s] * g_matrix[j][s];
          }
          u[static_cast<std::size_t>(i * 4 + j)][static_cast<std::size_t>(ko) * padded + c] = static_cast<float>(sum);
        }
      }
    }
  }
  for (const std::vector<float>& ui : u) w.products.push_back(pack_conv(pointwise, padded, kLanes, ui, {}, false));
  w.bias.assign(static_cast<std::size_t>((k + kLanes - 1) / kLanes) * kLanes, 0.0f);
  std::copy(bias.begin(), bias.end(), w.bias.begin());
  return w;
}

std::size_t winograd_scratch_size(const WinogradConv& w) {
  const std::size_t in_blocks = static_cast<std::size_t>(w.in_channels + kLanes - 1) / kLanes;
  const std::size_t out_blocks = static_cast<std::size_t>(w.attrs.out_channels + kLanes - 1) / kLanes;
  return 16 * kTiles * kLanes * (in_blocks + out_blocks);
}

INFER_AVX512 void conv_winograd(const WinogradConv& w, const BlockedShape& in_shape, const float* in,
                                const BlockedShape& out_shape, float* out, float* scratch) {
  const int tiles_w = (out_shape.w + 1) / 2, tiles = tiles_w * ((out_shape.h + 1) / 2);
  const int in_blocks = in_shape.blocks, out_blocks = out_shape.blocks;
  const __m512 zero = _mm512_setzero_ps();
  for (int first = 0; first < tiles; first += kTiles) {
    const int n = std::min(kTiles, tiles - first);
    // V[in block][tile][16 products][16 lanes] and M[out block][tile][16 products][16 lanes]: one
    // tile's 16 transformed values are consecutive, for the transforms to load and store them as
    // one 1 KiB run, and the products read and write them kWinogradStep apart.
    const std::size_t v_plane = static_cast<std::size_t>(n) * kWinogradStep;
    float* v = scratch;
    float* m = scratch + v_plane * in_blocks;
    for (int j = 0; j < n; ++j) {
      const int ty = (first + j) / tiles_w, tx = (first + j) % tiles_w;
      for (int block = 0; block < in_blocks; ++block) {
        const float* rows[4];
        for (int i = 0; i < 4; ++i) rows[i] = in + in_shape.at(block, 2 * ty - w.attrs.pad_h + i, 2 * tx - w.attrs.pad_w);
        Block4 d;
        input_transform(rows, d);
        float* vt = v + block * v_plane + static_cast<std::size_t>(j) * kWinogradStep;
        for (int e = 0; e < 16; ++e) _mm512_storeu_ps(vt + e * kLanes, d.v[e / 4][e % 4]);
      }
    }
    for (int e = 0; e < 16; ++e) {
      pointwise_blocked(w.products[static_cast<std::size_t>(e)], v + e * kLanes, v_plane, kWinogradStep, n, m + e * kLanes,
                        static_cast<std::size_t>(n) * kWinogradStep, kWinogradStep);
    }
    for (int j = 0; j < n; ++j) {
      const int ty = (first + j) / tiles_w, tx = (first + j) % tiles_w;
      for (int block = 0; block < out_blocks; ++block) {
        const float* mt = m + (static_cast<std::size_t>(block) * n + j) * kWinogradStep;
        __m512 t[2][4];  // A^T M
        for (int c = 0; c < 4; ++c) {
          const __m512 m0 = _mm512_loadu_ps(mt + (0 * 4 + c) * kLanes), m1 = _mm512_loadu_ps(mt + (1 * 4 + c) * kLanes);
          const __m512 m2 = _mm512_loadu_ps(mt + (2 * 4 + c) * kLanes), m3 = _mm512_loadu_ps(mt + (3 * 4 + c) * kLanes);
          t[0][c] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
          t[1][c] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
        }
        const __m512 b = _mm512_loadu_ps(w.bias.data() + block * kLanes);
        for (int r = 0; r < 2; ++r) {
          const int y = 2 * ty + r;
          if (y >= out_shape.h) break;
          __m512 o[2] = {_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(t[r][0], t[r][1]), t[r][2]), b),
                         _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(t[r][1], t[r][2]), t[r][3]), b)};
          for (int c = 0; c < 2 && 2 * tx + c < out_shape.w; ++c) {
            const __m512 value = w.relu ? _mm512_max_ps(zero, o[c]) : o[c];  // NaN propagates (second operand)
            _mm512_storeu_ps(out + out_shape.at(block, y, 2 * tx + c), value);
          }
        }
      }
    }
  }
}

}  // namespace infer::cpu

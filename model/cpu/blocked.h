// Direct AVX-512 kernels on a channel-blocked layout, for the convolutional front of a network
// (conv2d with groups 1, batch-norm, ReLU, max pooling). The im2col + sgemm path (conv2d.cpp)
// stays the general one; cpu_backend.cpp uses these where they apply and the CPU has AVX-512F.
//
// Layout of one sample ("NCHWc"): [C / cb][H + 2*halo_h][W + 2*halo_w][cb], cb = 16 lanes (one
// zmm register of channels), or cb = 1 for the network input (plain NCHW with a halo). Channels
// are padded with zeros up to a multiple of cb, and the halo (the padding the next convolution
// reads) is zero: kernels write the interior only, so a buffer zeroed once stays valid.
#pragma once

#include <cstddef>
#include <vector>

#include "../network.h"

namespace infer::cpu {

// True when the CPU can run these kernels (AVX-512F, checked at run time).
bool blocked_kernels_supported();

constexpr int kLanes = 16;

struct BlockedShape {
  int cb = kLanes;     // channels per block: kLanes, or 1 for the network input
  int blocks = 0;      // ceil(channels / cb)
  int h = 0, w = 0;    // interior
  int halo_h = 0, halo_w = 0;
  int row() const { return (w + 2 * halo_w) * cb; }                            // floats per padded row
  std::size_t plane() const { return static_cast<std::size_t>(h + 2 * halo_h) * row(); }  // per block
  std::size_t size() const { return plane() * blocks; }                        // floats per sample
  // Offset of interior element (block, y, x, lane 0).
  std::size_t at(int block, int y, int x) const {
    return plane() * block + static_cast<std::size_t>(y + halo_h) * row() + static_cast<std::size_t>(x + halo_w) * cb;
  }
};

// A convolution (with an optional folded batch-norm and fused ReLU) ready for conv_blocked:
// weights packed as [K/32 groups][C blocks][R][S][cb][2 x 16 output channels] (the last group
// may hold one block of 16), output channels padded to a multiple of 16 with zero weights and
// bias, so padded output channels are exactly 0 (and stay 0 through ReLU and max pooling).
struct PackedConv {
  Conv2dAttrs attrs;
  int in_channels = 0;
  std::vector<float> weight;  // packed as above
  std::vector<float> bias;    // [K padded to 16]
  bool relu = false;
};
// weight/bias: [K, C, R, S] / [K] (bias may be empty), e.g. the result of fold_batchnorm.
PackedConv pack_conv(const Conv2dAttrs& attrs, int in_channels, int cb, const std::vector<float>& weight,
                     const std::vector<float>& bias, bool relu);

// One sample each. `in` and `out` point at the sample's buffer (halo included).
void conv_blocked(const PackedConv& conv, const BlockedShape& in_shape, const float* in, const BlockedShape& out_shape,
                  float* out);
// A 1x1 convolution (conv: kernel 1, packed with cb = kLanes) over `pixels` pixels with chosen
// layouts: input block c, pixel j at in + c * in_plane + j * in_step; output block b, pixel j at
// out + b * out_plane + j * out_step. Used by the Winograd products, whose tiles are interleaved
// (in_step = out_step = kWinogradStep: the 16 transformed values of one tile are consecutive).
constexpr int kWinogradStep = 16 * kLanes;
void pointwise_blocked(const PackedConv& conv, const float* in, std::size_t in_plane, int in_step, int pixels,
                       float* out, std::size_t out_plane, int out_step);
void maxpool_blocked(const Pool2dAttrs& attrs, const BlockedShape& in_shape, const float* in,
                     const BlockedShape& out_shape, float* out);
// y = x * scale[c] + shift[c] (scale/shift padded with zeros to the blocks), optionally ReLU.
void affine_blocked(const std::vector<float>& scale, const std::vector<float>& shift, bool relu,
                    const BlockedShape& in_shape, const float* in, const BlockedShape& out_shape, float* out);
void relu_blocked(const BlockedShape& in_shape, const float* in, const BlockedShape& out_shape, float* out);

// A 3x3, stride-1 convolution by Winograd F(2x2, 3x3) (blocked_winograd.cpp): the 16 transformed
// filters, each packed as a 1x1 convolution for conv_blocked. Its input buffer needs a halo of
// padding + 1, and scratch of winograd_scratch_size floats.
struct WinogradConv {
  Conv2dAttrs attrs;
  int in_channels = 0;
  std::vector<PackedConv> products;  // 16: (G g G^T)[i][j] as [K][C padded to 16] 1x1 filters
  std::vector<float> bias;           // [K padded to 16]
  bool relu = false;
};
bool winograd_applicable(const Conv2dAttrs& attrs, int in_channels);
WinogradConv pack_winograd(const Conv2dAttrs& attrs, int in_channels, const std::vector<float>& weight,
                           const std::vector<float>& bias, bool relu);
std::size_t winograd_scratch_size(const WinogradConv& conv);
void conv_winograd(const WinogradConv& conv, const BlockedShape& in_shape, const float* in, const BlockedShape& out_shape,
                   float* out, float* scratch);

// A linear layer's weights packed for linear_packed (any number of samples, plain [n, features]
// input and output, as linear_forward).
struct PackedLinear {
  int in = 0, out = 0;
  std::vector<float> weight;  // [ceil(out / 48)][in][48], zero-padded
  std::vector<float> bias;    // [ceil(out / 48) * 48], zeros without a bias
};
PackedLinear pack_linear(const Layer& linear);
void linear_packed(const PackedLinear& linear, const float* in, int n, float* out);

// Plain NCHW (channels C) to blocked, and back (real channels only).
void to_blocked(const float* nchw, int channels, const BlockedShape& shape, float* out);
void from_blocked(const BlockedShape& shape, const float* in, int channels, float* nchw);

}  // namespace infer::cpu

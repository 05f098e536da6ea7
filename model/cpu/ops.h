// CPU kernels, one per op, each in its own file. All take NCHW float32 activations for n samples
// with per-sample shapes layer.in / layer.out (see network.h) and write every output element.
#pragma once

#include <vector>

#include "../fold.h"
#include "../network.h"

namespace infer::cpu {

// Scratch floats conv2d_forward needs for this layer: the im2col matrix of one sample and group,
// (C/groups * R * S) x (Hout * Wout); 0 when the convolution is a plain 1x1 matrix product.
std::size_t conv2d_scratch_size(const Layer& layer);
void conv2d_forward(const Layer& layer, const float* in, int n, float* out, float* scratch);

// y = x * scale[c] + shift[c], with scale and shift computed once (batchnorm_affine, fold.h).
void batchnorm_forward(const Layer& layer, const BatchNormAffine& bn, const float* in, int n, float* out);

void relu_forward(const Layer& layer, const float* in, int n, float* out);
void maxpool_forward(const Layer& layer, const float* in, int n, float* out);
void avgpool_forward(const Layer& layer, const float* in, int n, float* out);
void global_avgpool_forward(const Layer& layer, const float* in, int n, float* out);
void linear_forward(const Layer& layer, const float* in, int n, float* out);
// Softmax over the channels at every spatial position (over all features for a flat input).
void softmax_forward(const Layer& layer, const float* in, int n, float* out);

}  // namespace infer::cpu

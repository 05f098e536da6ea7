// CPU kernels, one per op, each in its own file. All take NCHW float32 activations for n samples
// with per-sample shapes layer.in / layer.out (see network.h) and write every output element.
#pragma once

#include <vector>

#include "graph/fold.h"
#include "graph/network.h"

namespace infer::cpu {

// Scratch floats conv2d_forward needs for this layer: the im2col matrix of one sample and group,
// (C/groups * R * S) x (Hout * Wout); 0 when the convolution is a plain 1x1 matrix product.
std::size_t conv2d_scratch_size(const Layer& layer);
void conv2d_forward(const Layer& layer, const float* in, int n, float* out, float* scratch);

// y = x * scale[c] + shift[c], with scale and shift computed once (batchnorm_affine, fold.h).
void batchnorm_forward(const Layer& layer, const BatchNormAffine& bn, const float* in, int n, float* out);

// Elementwise (activation.cpp); NaN in, NaN out.
void relu_forward(const Layer& layer, const float* in, int n, float* out);
// Nearest-neighbour upsampling by whole factors, and a border of one value (upsample.cpp).
void upsample_forward(const Layer& layer, const float* in, int n, float* out);
void pad_forward(const Layer& layer, const float* in, int n, float* out);
// Output channel j * groups + i is input channel i * k + j, C = groups * k (channel_shuffle.cpp).
void channel_shuffle_forward(const Layer& layer, const float* in, int n, float* out);
// Output channel c is input channel begin + c, c < end - begin (channel_slice.cpp).
void channel_slice_forward(const Layer& layer, const float* in, int n, float* out);
// Bilinear resize by graph/resize_formula.h (resize.cpp).
void resize_forward(const Layer& layer, const float* in, int n, float* out);
// Each pixel's channels normalised: weight (x - mean) / sqrt(var + epsilon) + bias (layernorm.cpp).
void layernorm_forward(const Layer& layer, const float* in, int n, float* out);

// Every pointwise op (ops.h INFER_POINTWISE_OPS) by its formula (pointwise_formula.h).
void pointwise_forward(const Layer& layer, const float* in, int n, float* out);

// Several inputs (combine.cpp), shapes layer.in_dims: a + b [then ReLU]; a * b, b the same shape or
// one value per channel; the inputs joined along the channels.
void add_forward(const Layer& layer, const float* a, const float* b, int n, float* out);
void mul_forward(const Layer& layer, const float* a, const float* b, int n, float* out);
void concat_forward(const Layer& layer, const std::vector<const float*>& in, int n, float* out);
void maxpool_forward(const Layer& layer, const float* in, int n, float* out);
void avgpool_forward(const Layer& layer, const float* in, int n, float* out);
void global_avgpool_forward(const Layer& layer, const float* in, int n, float* out);
void adaptive_avgpool_forward(const Layer& layer, const float* in, int n, float* out);
void linear_forward(const Layer& layer, const float* in, int n, float* out);
// Softmax over the channels at every spatial position (over all features for a flat input).
void softmax_forward(const Layer& layer, const float* in, int n, float* out);

}  // namespace infer::cpu

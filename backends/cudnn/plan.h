// The cuDNN plan of a Network: which cuDNN call runs which layers, every descriptor those calls
// take, and every activation shape, decided once for a maximum batch size. Building a plan needs
// cuDNN's host library only, no device (tests/backends/cudnn/test_cudnn_plan.cpp runs it without a GPU); the
// executor (executor.h) adds the device side: buffers, weights, algorithms.
//
// Precision (PlanOptions::precision) decides types, layouts and math:
//   Fp32  activations and weights float, NCHW; convolutions compute in float with CUDNN_FMA_MATH
//   Tf32  as Fp32, but CUDNN_TENSOR_OP_MATH on every convolution (TF32 tensor cores)
//   Fp16  activations and weights half, NHWC (what tensor cores read without transposing);
//         convolutions compute in float (cuDNN's PSEUDO_HALF_CONFIG) with CUDNN_TENSOR_OP_MATH;
//         biases half (the type of y), batch-norm parameters float (cudnnDeriveBNTensorDescriptor
//         derives float for half data). The executor converts the float NCHW input to half NHWC,
//         and half outputs back to float NCHW, with its own kernels (kernels.h). A softmax runs in
//         float: its input is converted to float NCHW first, and its output is float NCHW.
//         No channel padding: cuDNN runs C = 1 and other channel counts that are not multiples of
//         8 in NHWC half with slower kernels, but a cuDNN build or GPU may decline every algorithm
//         for them. So each Fp16 convolution step also carries float NCHW descriptors of the same
//         convolution (Step::fallback, FMA math), which the executor uses for that step alone
//         when every half NHWC candidate declines, converting its input and output around it.
// Every activation is fully packed, batch outermost; Activation says its type and layout.
// Thread safety: none; set_batch() changes the descriptors the executor passes to cuDNN.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cudnn/check.h"
#include "graph/network.h"

namespace infer::cudnn {

struct PlanOptions {
  Precision precision = Precision::Fp32;
  // A conv2d or linear followed by a batch-norm (fold.h batchnorm_foldable) becomes one
  // Convolution step with folded weights; false keeps an explicit BatchNorm step.
  bool fold_batchnorm = true;
};

enum class StepKind {
  Convolution,  // conv2d, or linear as a 1x1 convolution; bias; optionally a folded batch-norm, a
                // residual add (cudnnConvolutionBiasActivationForward's z) and the ReLU that follows
  BatchNorm,    // cudnnBatchNormalizationForwardInference with the raw gamma, beta, mean, variance
  Relu,         // cudnnActivationForward (a ReLU that does not follow a convolution)
  Pooling,      // max, average or global average pooling: cudnnPoolingForward
  Softmax,      // cudnnSoftmaxForward over the channels
  Alias,        // flatten: no call; its output is the input's device buffer seen as [n, C*H*W, 1, 1]
  Reorder,      // flatten of an NHWC activation with H*W > 1: cudnnTransformTensor to NCHW order first,
                // so that the flat features are in the network's (PyTorch's) order
  Binary,       // add or mul: cudnnOpTensor (b broadcast over H x W for a per-channel mul); an add's
                // ReLU then by cudnnActivationForward in place
  Concat,       // cudnnTransformTensor of each input into its channel slice of the output (a strided view)
  Pointwise,    // every pointwise op (ops.h): the project's kernel (kernels.h)
  Pad,          // a border of one value: cudnnSetTensor of the whole output, then cudnnTransformTensor
                // of the input into its interior (a strided view)
  Upsample,     // nearest, by whole factors: cudnnTransformTensor of the input into each phase of the
                // output (rows i, i + scale_h, ...; columns j, j + scale_w, ...), a strided view
  // channel shuffle: one cudnnTransformTensor between two strided views, the input's channels as
  // [groups, k] and the output's as the transposed [k, groups] (Step::shuffle_in, shuffle_out)
  ChannelShuffle,
  // channel slice: one cudnnTransformTensor from a strided view of the input (its channels
  // [begin, end), Step::slice_in at slice_in_offset_bytes) into the whole output
  ChannelSlice,
  Resize,     // bilinear: the project's kernel (kernels.h), in the input's type and layout
  LayerNorm,  // over the channels: the project's kernel (kernels.h), in the input's type and layout
};
const char* step_kind_name(StepKind kind);

// One activation tensor: the network input (index 0) or the output of layer i (index i + 1).
struct Activation {
  Dims dims;               // per sample
  std::size_t buffer = 0;  // index into Plan::buffer_bytes(); activations that alias share a buffer
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  TensorDesc desc;  // [batch, c, h, w] for the plan's current batch (Plan::batch())
  std::size_t element_bytes() const { return type == CUDNN_DATA_HALF ? 2 : 4; }
};

// One cuDNN call (or a fixed sequence, see executor.cpp) covering layers [first_layer, last_layer].
// Reads activation first_layer, writes activation last_layer + 1. Descriptors that a kind does not
// use are empty.
struct Step {
  StepKind kind = StepKind::Alias;
  std::vector<std::size_t> inputs;  // the activations it reads: the first layer's sources (network.h)
  std::size_t first_layer = 0;
  std::size_t last_layer = 0;  // the last layer of a convolution's folded batch-norm, add or ReLU, else first_layer
  std::string name;            // the layer names joined by '+': "conv1+relu1", "conv1+bn1+relu1"
  Dims in;                     // per sample, as the network says
  Dims out;                    // per sample, as cuDNN computes it (equal to the network's, checked)

  // Convolution
  bool folded_bn = false;   // layer first_layer + 1 is a batch-norm folded into the weights and bias
  bool fused_relu = false;  // the step ends in a ReLU: layer last_layer is a ReLU, or an add with its relu
  // A residual add in the step: layer `layer` (after the convolution and any folded batch-norm) adds
  // activation `z`, of the step's output shape, type and layout, to the convolution's result. It
  // runs as the fused call's z with alpha2 = 1, or as cudnnAddTensor after the separate calls.
  struct ResidualAdd {
    std::size_t layer = 0;
    std::size_t z = 0;  // index into Plan::activations()
  };
  std::optional<ResidualAdd> residual;
  bool has_bias = false;        // the conv/linear layer itself has a bias (a folded step always has one)
  FilterDesc filter;            // [K, C/groups, R, S]; linear: [out, in, 1, 1]; NHWC (K, R, S, C order) in Fp16
  ConvolutionDesc convolution;  // pads, strides, dilations, groups, cross-correlation, float compute, math type
  TensorDesc bias;              // [1, K, 1, 1] of the activation type (half bias for half data)
  // Fp16 only (empty otherwise): the same convolution in float NCHW, for a step whose half NHWC
  // calls decline (see the top of this file). x and y depend on the batch size (set_batch()).
  struct FloatFallback {
    TensorDesc x;                 // [batch, C, H, W] float NCHW: the step's input
    TensorDesc y;                 // [batch, K, P, Q] float NCHW: the convolution's output
    FilterDesc filter;            // [K, C/groups, R, S] float (KCRS)
    ConvolutionDesc convolution;  // `convolution`'s geometry, float compute, CUDNN_FMA_MATH
    TensorDesc bias;              // [1, K, 1, 1] float
  } fallback;

  // BatchNorm
  TensorDesc bn_params;  // [1, C, 1, 1], derived with cudnnDeriveBNTensorDescriptor (spatial)
  double epsilon = 0.0;

  // Pooling
  PoolingDesc pooling;
  // Ceil-mode max pooling whose last window overhangs the padded input (cuDNN pools with floor
  // division only): the input is copied (cudnnTransformTensor) into `padded_view`, a strided view of
  // buffer `padded_buffer` whose extra bottom rows and right columns hold -inf (set once by the
  // executor), and pooled from `padded`, the whole buffer. Both batch-dependent (set_batch()).
  TensorDesc padded;
  TensorDesc padded_view;
  Dims padded_dims;
  std::size_t padded_buffer = 0;

  // Reorder: the input as NCHW of its type; Softmax with a half input: the input as float NCHW,
  // in buffer `scratch` (the executor converts into it). Batch-dependent, re-set by set_batch().
  TensorDesc nchw_input;
  cudnnDataType_t nchw_type = CUDNN_DATA_FLOAT;
  std::size_t scratch = 0;  // index into Plan::buffer_bytes(); Softmax with a half input only

  // Binary: CUDNN_OP_TENSOR_ADD or _MUL, float compute, NaN propagated; fused_relu for an add's ReLU.
  OpTensorDesc op_tensor;

  // Concat: input k's place in the output: a [batch, C_k, H, W] descriptor with the output's strides
  // (batch-dependent, re-set by set_batch()), starting `offset_bytes` into the output buffer.
  // Upsample: one per phase (i, j), the input's shape with the output's strides times the scales,
  // starting at row i, column j. Pad: one, the input's shape with the output's strides, at row top,
  // column left; the rest of the output holds pad_value.
  struct Slice {
    TensorDesc desc;
    int channel = 0;  // the first output channel it fills
    std::size_t offset_bytes = 0;
  };
  std::vector<Slice> slices;

  float pad_value = 0.0f;

  // ChannelShuffle: the input as [batch, groups, k, H*W] with its own strides (in its layout,
  // channel i * k + j at [., i, j, .]), and the output buffer as the same shape whose element
  // [., i, j, .] is output channel j * groups + i; cudnnTransformTensor copies one into the other.
  // Batch-dependent, re-set by set_batch().
  TensorDesc shuffle_in;
  TensorDesc shuffle_out;

  // ChannelSlice: the input's channels [begin, end) as [batch, end - begin, H, W] with the input's
  // own strides, starting slice_in_offset_bytes into the input buffer (channel begin: begin * H * W
  // elements in NCHW, begin in NHWC); the output is the whole output activation. slice_in is
  // batch-dependent, re-set by set_batch().
  TensorDesc slice_in;
  std::size_t slice_in_offset_bytes = 0;

  // Pointwise: the kernel's op and parameters (kernels.h).
  int pointwise_op = 0;
  float pointwise_a = 0.0f;
  float pointwise_b = 0.0f;

  std::size_t input() const { return inputs[0]; }        // index into Plan::activations()
  std::size_t output() const { return last_layer + 1; }  // index into Plan::activations()
  std::size_t layer_count() const { return last_layer - first_layer + 1; }
};

class Plan {
 public:
  // Plans `network` (which must outlive the plan) for up to max_batch samples; the descriptors
  // start at batch max_batch. Throws std::invalid_argument for max_batch < 1, ModelError naming
  // the layer when cuDNN computes another output shape than the network (both shapes in the
  // message) or a parameter is outside cuDNN's range, GpuError naming the layer when a
  // descriptor call fails.
  // Fp16 also throws ModelError for a convolution after a softmax (its input would be float).
  Plan(const Network& network, int max_batch, const PlanOptions& options = {});

  const Network& network() const { return *network_; }
  const PlanOptions& options() const { return options_; }
  Precision precision() const { return options_.precision; }
  int max_batch() const { return max_batch_; }
  int batch() const { return batch_; }
  // The type of weights, biases and activations (before any softmax): half for Fp16, else float.
  cudnnDataType_t storage_type() const { return storage_type_; }
  cudnnTensorFormat_t storage_format() const { return storage_format_; }

  // Re-sets (cudnnSetTensor4dDescriptor; no descriptor is created) every activation descriptor,
  // every step's nchw_input and fallback x and y for n samples, 1 <= n <= max_batch. Filter, convolution, pooling and
  // bias descriptors do not depend on n. The values are read by each cuDNN call when it is made:
  // a call captured into a CUDA graph keeps the batch size of its capture.
  void set_batch(int n);

  const std::vector<Step>& steps() const { return steps_; }
  // True when the last step is a softmax over the channels of 1 x 1 outputs and the network's last
  // layer (a classifier's usual end): a top-k pass then runs that step and the selection as one
  // kernel (Kernels::softmax_top_k), reading the step's input.
  bool ends_in_class_softmax() const;
  const std::vector<Activation>& activations() const { return activations_; }
  // Bytes per sample of each device buffer; the executor allocates max_batch times this.
  const std::vector<std::size_t>& buffer_bytes() const { return buffer_bytes_; }

  // Shared activation descriptors: ReLU (NaN propagating) and identity (only for
  // cudnnConvolutionBiasActivationForward).
  cudnnActivationDescriptor_t relu() const { return relu_.get(); }
  cudnnActivationDescriptor_t identity() const { return identity_.get(); }

 private:
  Step layer_step(std::size_t index, StepKind kind) const;
  void plan_convolution(std::size_t index);
  // The residual add that may join the step of a convolution whose last layer so far is `last`.
  std::optional<Step::ResidualAdd> residual_add(std::size_t last) const;
  void plan_float_fallback(Step& step, const Conv2dAttrs& a) const;
  void plan_batchnorm(std::size_t index);
  void plan_single(std::size_t index, StepKind kind);
  void plan_pooling(std::size_t index);
  void plan_flatten(std::size_t index);
  void plan_softmax(std::size_t index);
  void plan_binary(std::size_t index);
  void plan_concat(std::size_t index);
  void plan_pointwise(std::size_t index);
  void plan_own_kernel(std::size_t index, StepKind kind);
  void plan_upsample(std::size_t index);
  void plan_pad(std::size_t index);
  void plan_channel_shuffle(std::size_t index);
  void plan_channel_slice(std::size_t index);
  void set_slices(const Step& step, int n) const;
  void set_shuffle(const Step& step, int n) const;
  void set_channel_slice(const Step& step, int n) const;
  void set_padded(const Step& step, int n) const;
  // The activation layer `index` reads as its input k.
  const Activation& input_of(std::size_t index, std::size_t k = 0) const;
  // Throws ModelError when an input of layer `index` is not in the storage type and layout (a
  // softmax's float NCHW output under Fp16): the ops that combine or convolve need them.
  void require_storage_inputs(std::size_t index) const;
  std::size_t new_buffer(const Dims& dims, cudnnDataType_t type);
  void set_output_type(std::size_t index, cudnnDataType_t type, cudnnTensorFormat_t format);

  const Network* network_;
  PlanOptions options_;
  int max_batch_;
  int batch_;
  cudnnDataType_t storage_type_;
  cudnnTensorFormat_t storage_format_;
  std::vector<Activation> activations_;
  std::vector<std::size_t> buffer_bytes_;
  std::vector<Step> steps_;
  ActivationDesc relu_;
  ActivationDesc identity_;
};

// Throws ModelError unless cuDNN's output shape (n, c, h, w), as computed by `call`, is the
// network's: batch `expected_n` of layer.out. The message names the layer and both shapes.
void require_network_dims(const Layer& layer, const char* call, int expected_n, int n, int c, int h, int w);

// "layer 'conv1'": the context of every check while planning or running that layer.
std::string layer_context(const Layer& layer);

// Bytes of one element of `type`: 2 for half, 4 for float.
std::size_t type_bytes(cudnnDataType_t type);

}  // namespace infer::cudnn

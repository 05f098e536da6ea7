// The cuDNN plan of a Network: which cuDNN call runs which layers, every descriptor those calls
// take, and every activation shape, decided once for a maximum batch size. Building a plan needs
// cuDNN's host library only, no device (tests/test_cudnn_plan.cpp runs it without a GPU); the
// executor (executor.h) adds the device side: buffers, weights, algorithms.
//
// Layout: every activation is NCHW float32, fully packed, batch outermost (as network.h).
// Thread safety: none; set_batch() changes the descriptors the executor passes to cuDNN.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../network.h"
#include "check.h"

namespace infer::cudnn {

enum class StepKind {
  Convolution,  // conv2d, or linear as a 1x1 convolution; bias; optionally the ReLU that follows it
  BatchNorm,    // cudnnBatchNormalizationForwardInference with the raw gamma, beta, mean, variance
  Relu,         // cudnnActivationForward (a ReLU that does not follow a convolution)
  Pooling,      // max, average or global average pooling: cudnnPoolingForward
  Softmax,      // cudnnSoftmaxForward over the channels
  Alias,        // flatten: no call; its output is the input's device buffer seen as [n, C*H*W, 1, 1]
};
const char* step_kind_name(StepKind kind);

// One activation tensor: the network input (index 0) or the output of layer i (index i + 1).
struct Activation {
  Dims dims;               // per sample
  std::size_t buffer = 0;  // index into Plan::buffer_floats(); activations that alias share a buffer
  TensorDesc desc;         // [batch, c, h, w] for the plan's current batch (Plan::batch())
};

// One cuDNN call (or a fixed sequence, see executor.cpp) covering layers [first_layer, last_layer].
// Reads activation first_layer, writes activation last_layer + 1. Descriptors that a kind does not
// use are empty.
struct Step {
  StepKind kind = StepKind::Alias;
  std::size_t first_layer = 0;
  std::size_t last_layer = 0;  // first_layer + 1 for a convolution fused with its ReLU, else first_layer
  std::string name;            // the layer names joined by '+': "conv1+relu1"
  Dims in;                     // per sample, as the network says
  Dims out;                    // per sample, as cuDNN computes it (equal to the network's, checked)

  // Convolution
  bool fused_relu = false;     // the ReLU layer last_layer is part of this step
  bool has_bias = false;       // false: the layer has no bias (the executor passes zeros where needed)
  FilterDesc filter;           // [K, C/groups, R, S]; linear: [out, in, 1, 1]
  ConvolutionDesc convolution; // pads, strides, dilations, groups, cross-correlation, FP32 FMA math
  TensorDesc bias;             // [1, K, 1, 1]

  // BatchNorm
  TensorDesc bn_params;        // [1, C, 1, 1], derived with cudnnDeriveBNTensorDescriptor (spatial)
  double epsilon = 0.0;

  // Pooling
  PoolingDesc pooling;

  std::size_t input() const { return first_layer; }      // index into Plan::activations()
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
  Plan(const Network& network, int max_batch);

  const Network& network() const { return *network_; }
  int max_batch() const { return max_batch_; }
  int batch() const { return batch_; }

  // Re-sets (cudnnSetTensor4dDescriptor; no descriptor is created) every activation descriptor for
  // n samples, 1 <= n <= max_batch. Filter, convolution, pooling and bias descriptors do not
  // depend on n.
  void set_batch(int n);

  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<Activation>& activations() const { return activations_; }
  // Floats per sample of each device buffer; the executor allocates max_batch times this.
  const std::vector<std::size_t>& buffer_floats() const { return buffer_floats_; }

  // Shared activation descriptors: ReLU (NaN propagating) and identity (only for
  // cudnnConvolutionBiasActivationForward).
  cudnnActivationDescriptor_t relu() const { return relu_.get(); }
  cudnnActivationDescriptor_t identity() const { return identity_.get(); }

 private:
  void plan_convolution(std::size_t index, bool fuse_relu);
  void plan_batchnorm(std::size_t index);
  void plan_single(std::size_t index, StepKind kind);
  void plan_pooling(std::size_t index);
  std::size_t new_buffer(const Dims& dims);

  const Network* network_;
  int max_batch_;
  int batch_;
  std::vector<Activation> activations_;
  std::vector<std::size_t> buffer_floats_;
  std::vector<Step> steps_;
  ActivationDesc relu_;
  ActivationDesc identity_;
};

// Throws ModelError unless cuDNN's output shape (n, c, h, w), as computed by `call`, is the
// network's: batch `expected_n` of layer.out. The message names the layer and both shapes.
void require_network_dims(const Layer& layer, const char* call, int expected_n, int n, int c, int h, int w);

// "layer 'conv1'": the context of every check while planning or running that layer.
std::string layer_context(const Layer& layer);

}  // namespace infer::cudnn

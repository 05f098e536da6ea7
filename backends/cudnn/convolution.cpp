// Convolution steps (conv2d and linear, with a folded batch-norm, a residual add and a fused ReLU): their
// execution, with the algorithms, the mode (fused or separate calls) and the float fallback that
// convolution_algorithms.cpp chose for each step when the executor was built.
//
// Partial runs of a step (a forward pass that stops inside it; `stop` layers of the step run):
//   folded conv+bn[+relu]  stop 1: the convolution with the ORIGINAL weights and bias
//                          stop 2: the folded convolution without the ReLU
//                          stop 3: the whole step
//   conv+relu              stop 1: convolution and bias without the ReLU
//   a residual add         the stop that includes the add layer adds z; a stop before it does not
//                          (its layers run as above). A fused call only runs with the z it was
//                          probed with: a partial run that stops before the add runs separately.
#include <string>
#include <utility>

#include "backends/cudnn/calls.h"
#include "backends/cudnn/declines.h"
#include "backends/cudnn/executor.h"

namespace infer::cudnn {

// Weights and bias: the folded ones once the batch-norm is included (stop >= 2 of a folded step),
// else the layer's own (zeros when it has none). y: the output of the last of the `stop` layers
// (every activation of a step shares one buffer), or fallback_y_. z: the residual once the add is
// included (fallback_z_ for a float fallback), else zero_z_ (see conv_bias_activation), described as y.
Executor::ConvolutionOperands Executor::convolution_operands(const Step& step, bool float_fallback, std::size_t stop) {
  const bool folded = step.folded_bn && stop >= 2;
  const bool add_z = step.residual && step.first_layer + stop > step.residual->layer;
  const std::size_t out_index = step.first_layer + stop;
  const LayerWeights& w = weights_[step.first_layer];
  if (float_fallback) {
    const Step::FloatFallback& f = step.fallback;
    const DeviceIn bias = folded ? w.float_folded_bias.in() : step.has_bias ? w.float_bias.in() : zero_bias_.in();
    return {TensorIn(f.x.get(), fallback_x_.in()),
            FilterIn(f.filter.get(), (folded ? w.float_folded_weight : w.float_weight).in()),
            f.convolution.get(),
            TensorIn(f.bias.get(), bias),
            TensorIn(f.y.get(), add_z ? fallback_z_.in() : zero_z_.in()),
            add_z,
            TensorOut(f.y.get(), fallback_y_.out()),
            TensorIn(f.y.get(), fallback_y_.in())};
  }
  const cudnnTensorDescriptor_t y = plan_.activations()[out_index].desc.get();
  const DeviceIn bias = folded ? w.folded_bias.in() : step.has_bias ? w.bias.in() : zero_bias_.in();
  return {tensor_in(step.input()),
          FilterIn(step.filter.get(), (folded ? w.folded_weight : w.weight).in()),
          step.convolution.get(),
          TensorIn(step.bias.get(), bias),
          add_z ? tensor_in(step.residual->z) : TensorIn(y, zero_z_.in()),
          add_z,
          tensor_out(out_index),
          tensor_in(out_index)};
}

// y = act(conv(x) + alpha2 * z + bias) for the first `stop` layers of the step
// (convolution_operands). act: ReLU when the step's ReLU is included, else identity. z: the
// residual with alpha2 = 1 once the step's add is included; else zero_z_, zeros, with alpha2 = 0:
// zeros keep the result finite even if cuDNN reads z (y itself could hold NaN or Inf from an
// earlier batch). `workspace` bytes of the
// shared workspace are offered: the probes and the real calls offer the same amount, so a
// configuration that passed its probe gets what it ran with (or more, where another batch size
// needs more: prepare_batch_size).
cudnnStatus_t Executor::conv_bias_activation(const Step& step, bool float_fallback, cudnnConvolutionFwdAlgo_t algo,
                                             std::size_t stop, std::size_t workspace) {
  const bool relu = step.fused_relu && stop == step.layer_count();
  const ConvolutionOperands o = convolution_operands(step, float_fallback, stop);
  return convolution_bias_activation_forward(handle_.get(), o.x, o.w, o.convolution, algo,
                                             workspace_.out().first(workspace), o.z, o.add_z, o.bias,
                                             relu ? plan_.relu() : plan_.identity(), o.y);
}

// conv(x) alone (no bias), with the weights of the first `stop` layers, into y (convolution_operands).
cudnnStatus_t Executor::plain_convolution(const Step& step, bool float_fallback, cudnnConvolutionFwdAlgo_t algo,
                                          std::size_t stop, std::size_t workspace) {
  const ConvolutionOperands o = convolution_operands(step, float_fallback, stop);
  return convolution_forward(handle_.get(), o.x, o.w, o.convolution, algo, workspace_.out().first(workspace), o.y);
}

// Runs the first `stop` layers of the step (1 <= stop <= step.layer_count(); see the top of this
// file); a float fallback between its two conversions.
void Executor::run_convolution(const Step& step, const ConvolutionChoice& choice, std::size_t stop, bool capturing) {
  if (!choice.float_fallback) {
    convolution_calls(step, choice, stop, capturing);
    return;
  }
  const Layer& layer = plan_.network().layers()[step.first_layer];
  const int n = plan_.batch();
  cudaStream_t stream = stream_.get();
  INFER_KERNEL_CHECK(layer_context(layer),
                     convert_half_nhwc_to_float_nchw(kernels_, in(step.input()), fallback_x_.out(), n, step.in.c,
                                                     step.in.h, step.in.w, stream));
  const Dims& d = layer.out;  // a batch-norm, an add and a ReLU in the step keep the shape
  if (convolution_operands(step, true, stop).add_z) {
    INFER_KERNEL_CHECK(
        layer_context(layer),
        convert_half_nhwc_to_float_nchw(kernels_, in(step.residual->z), fallback_z_.out(), n, d.c, d.h, d.w, stream));
  }
  convolution_calls(step, choice, stop, capturing);
  INFER_KERNEL_CHECK(layer_context(layer),
                     convert_float_nchw_to_half_nhwc(kernels_, fallback_y_.in(), out(step.first_layer + stop), n, d.c,
                                                     d.h, d.w, stream));
}

void Executor::convolution_calls(const Step& step, const ConvolutionChoice& choice, std::size_t stop, bool capturing) {
  const Layer& layer = plan_.network().layers()[step.first_layer];
  const bool whole = stop == step.layer_count();
  const bool folded = step.folded_bn && stop >= 2;
  const bool relu = step.fused_relu && whole;
  const bool fallback = choice.float_fallback;
  // The fused call runs what it was chosen (and probed) for: the whole step. A convolution without
  // a ReLU in its step also fuses a partial run that includes its add, if any (it is the same call
  // on other weights).
  const ConvolutionOperands o = convolution_operands(step, fallback, stop);
  const bool fused = (whole && choice.mode != ConvolutionMode::Separate) ||
                     (!step.fused_relu && choice.mode == ConvolutionMode::FusedIdentity &&
                      o.add_z == static_cast<bool>(step.residual));
  const std::pair<std::size_t, int> at_this_batch{step.first_layer, plan_.batch()};
  if (fused && fused_declined_.count(at_this_batch) == 0) {
    const cudnnStatus_t s = conv_bias_activation(step, fallback, choice.fused_algo, stop, choice.workspace_bytes);
    if (s == CUDNN_STATUS_SUCCESS) return;
    const char* call =
        relu ? "cudnnConvolutionBiasActivationForward (ReLU)" : "cudnnConvolutionBiasActivationForward (identity)";
    // Probed at n = 1 and n = max_batch only; see declines_this_batch_size for what may switch.
    if (!declines_this_batch_size(s)) detail::throw_cudnn_error(s, call, layer_context(layer), __FILE__, __LINE__);
    // During a capture a decline is not this batch size's answer (the direct run just before it
    // accepted the call): thrown, it reaches Executor::capture, which logs it and runs this pass
    // directly, and the fused call stays in use.
    if (capturing) {
      detail::throw_cudnn_error(s, call, layer_context(layer) + " (during CUDA graph capture)", __FILE__, __LINE__);
    }
    fused_declined_.insert(at_this_batch);
    log(step.name + ": " + call + " declined n = " + std::to_string(plan_.batch()) + " (" +
        detail::one_line(detail::cudnn_error_text(s)) + "); the separate calls run this step at that batch size");
    clear_last_error();
  }
  cudnnHandle_t handle = handle_.get();
  const cudnnStatus_t s = plain_convolution(step, fallback, choice.plain_algo, stop, choice.workspace_bytes);
  if (s != CUDNN_STATUS_SUCCESS) {
    detail::throw_cudnn_error(s, "cudnnConvolutionForward", layer_context(layer), __FILE__, __LINE__);
  }
  if (folded || step.has_bias) INFER_CUDNN_CHECK(layer_context(layer), add_tensor(handle, o.bias, o.y));
  if (o.add_z) INFER_CUDNN_CHECK(layer_context(layer), add_tensor(handle, o.z, o.y));
  // In place (x and y the same memory), which cudnnActivationForward allows.
  if (relu) INFER_CUDNN_CHECK(layer_context(layer), activation_forward(handle, plan_.relu(), o.y_in, o.y));
}

}  // namespace infer::cudnn

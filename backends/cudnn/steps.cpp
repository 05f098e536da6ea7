// The steps other than convolutions (convolution.cpp): one wrapped cuDNN call or kernel each (calls.h).
#include <algorithm>

#include "backends/cudnn/executor.h"

namespace infer::cudnn {

// Runs the layers of a step that are below layer_count (a forward pass may stop inside a fused step).
void Executor::run_step(std::size_t step_index, std::size_t layer_count, bool capturing) {
  const Step& step = plan_.steps()[step_index];
  const Layer& layer = plan_.network().layers()[step.first_layer];  // the checks' context, built on failure only
  cudnnHandle_t handle = handle_.get();
  switch (step.kind) {
    case StepKind::Convolution:
      run_convolution(step, convolutions_[step_index], std::min(layer_count, step.last_layer + 1) - step.first_layer,
                      capturing);
      return;
    case StepKind::BatchNorm: {
      const LayerWeights& w = weights_[step.first_layer];
      const BatchNormParams params{step.bn_params.get(), w.weight.in(), w.bias.in(), w.running_mean.in(),
                                   w.running_var.in()};
      INFER_CUDNN_CHECK(layer_context(layer),
                        batch_norm_forward_inference(handle, tensor_in(step.input()), tensor_out(step.output()), params,
                                                     step.epsilon));
      return;
    }
    case StepKind::Relu:
      INFER_CUDNN_CHECK(layer_context(layer),
                        activation_forward(handle, plan_.relu(), tensor_in(step.input()), tensor_out(step.output())));
      return;
    case StepKind::Pooling:
      if (step.padded) {  // ceil mode: into the -inf-bordered buffer first (plan.h)
        DeviceBuffer& padded = buffers_[step.padded_buffer];
        INFER_CUDNN_CHECK(layer_context(layer), transform_tensor(handle, tensor_in(step.input()),
                                                                 TensorOut(step.padded_view.get(), padded.out())));
        INFER_CUDNN_CHECK(layer_context(layer),
                          pooling_forward(handle, step.pooling.get(), TensorIn(step.padded.get(), padded.in()),
                                          tensor_out(step.output())));
        return;
      }
      INFER_CUDNN_CHECK(layer_context(layer), pooling_forward(handle, step.pooling.get(), tensor_in(step.input()),
                                                              tensor_out(step.output())));
      return;
    case StepKind::Softmax: {
      if (!step.nchw_input) {
        INFER_CUDNN_CHECK(layer_context(layer),
                          softmax_forward(handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
                                          tensor_in(step.input()), tensor_out(step.output())));
        return;
      }
      // A half NHWC input: to float NCHW in the step's scratch buffer first (plan.h).
      const Dims& d = step.in;
      DeviceBuffer& scratch = buffers_[step.scratch];
      INFER_KERNEL_CHECK(layer_context(layer),
                         convert_half_nhwc_to_float_nchw(kernels_, in(step.input()), scratch.out(), plan_.batch(), d.c,
                                                         d.h, d.w, stream_.get()));
      INFER_CUDNN_CHECK(layer_context(layer),
                        softmax_forward(handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
                                        TensorIn(step.nchw_input.get(), scratch.in()), tensor_out(step.output())));
      return;
    }
    case StepKind::Reorder:
      // Same type, NHWC to NCHW: the layout change cudnnTransformTensor is documented for.
      INFER_CUDNN_CHECK(layer_context(layer), transform_tensor(handle, tensor_in(step.input()),
                                                               TensorOut(step.nchw_input.get(), out(step.output()))));
      return;
    case StepKind::Alias: return;  // the output is the input's buffer
    case StepKind::Binary:
      INFER_CUDNN_CHECK(layer_context(layer), op_tensor(handle, step.op_tensor.get(), tensor_in(step.inputs[0]),
                                                        tensor_in(step.inputs[1]), tensor_out(step.output())));
      if (step.fused_relu) {
        INFER_CUDNN_CHECK(layer_context(layer), activation_forward(handle, plan_.relu(), tensor_in(step.output()),
                                                                   tensor_out(step.output())));
      }
      return;
    case StepKind::Concat:
      for (std::size_t k = 0; k < step.slices.size(); ++k) {
        const Step::Slice& slice = step.slices[k];
        INFER_CUDNN_CHECK(layer_context(layer),
                          transform_tensor(handle, tensor_in(step.inputs[k]),
                                           TensorOut(slice.desc.get(), out(step.output()).from(slice.offset_bytes))));
      }
      return;
    case StepKind::Pad:
      INFER_CUDNN_CHECK(layer_context(layer), fill_tensor(handle, tensor_out(step.output()),
                                                          plan_.activations()[step.output()].type, step.pad_value));
      INFER_CUDNN_CHECK(
          layer_context(layer),
          transform_tensor(handle, tensor_in(step.input()),
                           TensorOut(step.slices[0].desc.get(), out(step.output()).from(step.slices[0].offset_bytes))));
      return;
    case StepKind::Upsample:
      for (const Step::Slice& slice : step.slices) {
        INFER_CUDNN_CHECK(layer_context(layer),
                          transform_tensor(handle, tensor_in(step.input()),
                                           TensorOut(slice.desc.get(), out(step.output()).from(slice.offset_bytes))));
      }
      return;
    case StepKind::ChannelShuffle:
      INFER_CUDNN_CHECK(layer_context(layer),
                        transform_tensor(handle, TensorIn(step.shuffle_in.get(), in(step.input())),
                                         TensorOut(step.shuffle_out.get(), out(step.output()))));
      return;
    case StepKind::ChannelSlice:
      INFER_CUDNN_CHECK(
          layer_context(layer),
          transform_tensor(handle, TensorIn(step.slice_in.get(), in(step.input()).from(step.slice_in_offset_bytes)),
                           tensor_out(step.output())));
      return;
    case StepKind::Resize: {
      const Activation& x = plan_.activations()[step.input()];
      const Activation& y = plan_.activations()[step.output()];
      INFER_KERNEL_CHECK(layer_context(layer),
                         resize_bilinear(kernels_, in(step.input()), out(step.output()), plan_.batch(), x.dims.c,
                                         x.dims.h, x.dims.w, y.dims.h, y.dims.w, layer.resize().align_corners,
                                         y.type == CUDNN_DATA_HALF, y.format == CUDNN_TENSOR_NHWC, stream_.get()));
      return;
    }
    case StepKind::LayerNorm: {
      const Activation& y = plan_.activations()[step.output()];
      const LayerWeights& w = weights_[step.first_layer];
      INFER_KERNEL_CHECK(
          layer_context(layer),
          cudnn::layernorm(kernels_, in(step.input()), out(step.output()), w.weight.in(), w.bias.in(), plan_.batch(),
                           y.dims.c, y.dims.h, y.dims.w, static_cast<float>(layer.layernorm().epsilon),
                           y.type == CUDNN_DATA_HALF, y.format == CUDNN_TENSOR_NHWC, stream_.get()));
      return;
    }
    case StepKind::Pointwise: {
      const Activation& y = plan_.activations()[step.output()];
      const std::size_t count = static_cast<std::size_t>(plan_.batch()) * y.dims.size();
      INFER_KERNEL_CHECK(layer_context(layer),
                         pointwise(kernels_, step.pointwise_op, step.pointwise_a, step.pointwise_b, in(step.input()),
                                   out(step.output()), count, y.type == CUDNN_DATA_HALF, stream_.get()));
      return;
    }
  }
}

}  // namespace infer::cudnn

// Planning of the steps that copy into slices of their output (Step::Slice): concat, upsample and
// pad; of the channel shuffle, a copy between two strided views; and of the channel slice, a copy
// from a strided view of the input. A slice is a strided view of the output buffer, filled by
// cudnnTransformTensor; the copies are exact in any type.
#include "backends/cudnn/plan.h"

#include <string>
#include <utility>

#include "graph/model_error.h"

namespace infer::cudnn {

// Concat: each input copied into its channel range of the output. The range is a view of the output
// buffer: input k's shape with the output's strides, starting at its first channel (NCHW: channel
// c0 starts c0 * H * W elements in; NHWC: c0 elements in).
void Plan::plan_concat(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const std::string context = layer_context(layer);
  require_storage_inputs(index);
  Step step = layer_step(index, StepKind::Concat);
  step.out = layer.out;
  const std::size_t plane = static_cast<std::size_t>(layer.out.h) * layer.out.w;
  int channel = 0;
  for (const Dims& d : layer.in_dims) {
    Step::Slice slice;
    slice.desc = TensorDesc::create(context);
    slice.channel = channel;
    slice.offset_bytes = static_cast<std::size_t>(channel) * (storage_format_ == CUDNN_TENSOR_NHWC ? 1 : plane) *
                         type_bytes(storage_type_);
    step.slices.push_back(std::move(slice));
    channel += d.c;
  }
  set_slices(step, max_batch_);
  activations_[index + 1].buffer = new_buffer(layer.out, storage_type_);
  set_output_type(index, storage_type_, storage_format_);
  steps_.push_back(std::move(step));
}

// Upsample: the scale_h x scale_w phases of the output, one cudnnTransformTensor each (slices as
// for a concat, the input's shape with the output's strides times the scales). The copies are
// exact in any type. More than kMaxUpsamplePhases phases are refused naming the layer (the CPU
// runs them; --device auto falls back to it).
void Plan::plan_upsample(std::size_t index) {
  constexpr long long kMaxUpsamplePhases = 64;
  const Layer& layer = network_->layers()[index];
  const std::string context = layer_context(layer);
  const UpsampleAttrs& a = layer.upsample();
  if (static_cast<long long>(a.scale_h) * a.scale_w > kMaxUpsamplePhases) {
    throw ModelError(context + " (upsample): an upsampling by " + std::to_string(a.scale_h) + "x" +
                     std::to_string(a.scale_w) + " takes more than " + std::to_string(kMaxUpsamplePhases) +
                     " copies on the cuDNN backend; the CPU backend runs it");
  }
  require_storage_inputs(index);
  Step step = layer_step(index, StepKind::Upsample);
  step.out = layer.out;
  const std::size_t element =
      (storage_format_ == CUDNN_TENSOR_NHWC ? static_cast<std::size_t>(layer.out.c) : 1) * type_bytes(storage_type_);
  for (int i = 0; i < a.scale_h; ++i) {
    for (int j = 0; j < a.scale_w; ++j) {
      Step::Slice slice;
      slice.desc = TensorDesc::create(context);
      slice.offset_bytes =
          (static_cast<std::size_t>(i) * static_cast<std::size_t>(layer.out.w) + static_cast<std::size_t>(j)) * element;
      step.slices.push_back(std::move(slice));
    }
  }
  set_slices(step, max_batch_);
  activations_[index + 1].buffer = new_buffer(layer.out, storage_type_);
  set_output_type(index, storage_type_, storage_format_);
  steps_.push_back(std::move(step));
}

// Pad: the whole output set to the value (cudnnSetTensor, in the storage type: -inf stays -inf
// in half), then the input copied into its interior, a slice as for a concat. Exact in any type.
void Plan::plan_pad(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const PadAttrs& a = layer.pad();
  require_storage_inputs(index);
  Step step = layer_step(index, StepKind::Pad);
  step.out = layer.out;
  step.pad_value = a.value;
  Step::Slice slice;
  slice.desc = TensorDesc::create(layer_context(layer));
  slice.offset_bytes =
      (static_cast<std::size_t>(a.top) * static_cast<std::size_t>(layer.out.w) + static_cast<std::size_t>(a.left)) *
      (storage_format_ == CUDNN_TENSOR_NHWC ? static_cast<std::size_t>(layer.out.c) : 1) * type_bytes(storage_type_);
  step.slices.push_back(std::move(slice));
  set_slices(step, max_batch_);
  activations_[index + 1].buffer = new_buffer(layer.out, storage_type_);
  set_output_type(index, storage_type_, storage_format_);
  steps_.push_back(std::move(step));
}

// Channel shuffle: one cudnnTransformTensor from a view of the input as [n, groups, k, H*W] (H and W
// as one dimension: consecutive positions in either layout) with the input's own strides, so that
// element [b, i, j, p] is input channel i * k + j, into a view of the output of the same shape with
// the two channel strides transposed, so that the same element lands in output channel
// j * groups + i. The output has the input's type and layout; the copy is exact in any type.
void Plan::plan_channel_shuffle(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const Activation& x = input_of(index);
  Step step = layer_step(index, StepKind::ChannelShuffle);
  step.shuffle_in = TensorDesc::create(layer_context(layer));
  step.shuffle_out = TensorDesc::create(layer_context(layer));
  activations_[index + 1].buffer = new_buffer(layer.out, x.type);
  set_output_type(index, x.type, x.format);
  set_shuffle(step, max_batch_);
  steps_.push_back(std::move(step));
}

// The two views of a ChannelShuffle step for n samples (cudnnSetTensor4dDescriptorEx).
void Plan::set_shuffle(const Step& step, int n) const {
  const Layer& layer = network_->layers()[step.first_layer];
  const Activation& x = input_of(step.first_layer);
  const Dims& d = layer.in;
  const int groups = layer.channel_shuffle().groups, k = d.c / groups, plane = d.h * d.w;
  const int sample = static_cast<int>(d.size());
  // From one channel to the next, and from one position to the next, in the input's layout.
  const bool nhwc = x.format == CUDNN_TENSOR_NHWC;
  const int channel = nhwc ? 1 : plane, position = nhwc ? d.c : 1;
  INFER_CUDNN_CHECK(layer_context(layer), cudnnSetTensor4dDescriptorEx(step.shuffle_in.get(), x.type, n, groups, k,
                                                                       plane, sample, k * channel, channel, position));
  INFER_CUDNN_CHECK(layer_context(layer),
                    cudnnSetTensor4dDescriptorEx(step.shuffle_out.get(), x.type, n, groups, k, plane, sample, channel,
                                                 groups * channel, position));
}

// Channel slice: one cudnnTransformTensor from a view of the input's channels [begin, end) (the
// input's shape with end - begin channels and the input's own strides, starting at channel begin:
// begin * H * W elements in NCHW, begin in NHWC, where a position is C elements long) into the
// whole output. The output has the input's type and layout; the copy is exact in any type.
void Plan::plan_channel_slice(std::size_t index) {
  const Layer& layer = network_->layers()[index];
  const Activation& x = input_of(index);
  Step step = layer_step(index, StepKind::ChannelSlice);
  step.out = layer.out;
  step.slice_in = TensorDesc::create(layer_context(layer));
  const std::size_t channel =
      x.format == CUDNN_TENSOR_NHWC ? 1 : static_cast<std::size_t>(layer.in.h) * static_cast<std::size_t>(layer.in.w);
  step.slice_in_offset_bytes = static_cast<std::size_t>(layer.channel_slice().begin) * channel * type_bytes(x.type);
  activations_[index + 1].buffer = new_buffer(layer.out, x.type);
  set_output_type(index, x.type, x.format);
  set_channel_slice(step, max_batch_);
  steps_.push_back(std::move(step));
}

// The input view of a ChannelSlice step for n samples (cudnnSetTensor4dDescriptorEx, strides of the
// whole input in its layout).
void Plan::set_channel_slice(const Step& step, int n) const {
  const Layer& layer = network_->layers()[step.first_layer];
  const Activation& x = input_of(step.first_layer);
  const Dims& d = layer.in;
  const bool nhwc = x.format == CUDNN_TENSOR_NHWC;
  const int channel = nhwc ? 1 : d.h * d.w, position = nhwc ? d.c : 1;
  INFER_CUDNN_CHECK(layer_context(layer),
                    cudnnSetTensor4dDescriptorEx(step.slice_in.get(), x.type, n, layer.out.c, d.h, d.w,
                                                 static_cast<int>(d.size()), channel, d.w * position, position));
}

// The slice descriptors of a Concat, Upsample or Pad step for n samples (cudnnSetTensor4dDescriptorEx,
// strides of the whole output in the storage layout).
void Plan::set_slices(const Step& step, int n) const {
  const Layer& layer = network_->layers()[step.first_layer];
  const Dims o = layer.out;
  const bool nhwc = storage_format_ == CUDNN_TENSOR_NHWC;
  const int n_stride = o.c * o.h * o.w;
  const int c_stride = nhwc ? 1 : o.h * o.w;
  const int h_stride = nhwc ? o.w * o.c : o.w;
  const int w_stride = nhwc ? o.c : 1;
  if (layer.kind == LayerKind::Upsample || layer.kind == LayerKind::Pad) {
    const Dims& i = layer.in;
    const int sh = layer.kind == LayerKind::Upsample ? layer.upsample().scale_h : 1;
    const int sw = layer.kind == LayerKind::Upsample ? layer.upsample().scale_w : 1;
    for (const Step::Slice& slice : step.slices) {
      INFER_CUDNN_CHECK(layer_context(layer),
                        cudnnSetTensor4dDescriptorEx(slice.desc.get(), storage_type_, n, i.c, i.h, i.w, n_stride,
                                                     c_stride, h_stride * sh, w_stride * sw));
    }
    return;
  }
  for (std::size_t k = 0; k < step.slices.size(); ++k) {
    INFER_CUDNN_CHECK(layer_context(layer),
                      cudnnSetTensor4dDescriptorEx(step.slices[k].desc.get(), storage_type_, n, layer.in_dims[k].c, o.h,
                                                   o.w, n_stride, c_stride, h_stride, w_stride));
  }
}

}  // namespace infer::cudnn

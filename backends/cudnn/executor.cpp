// The executor's construction (every buffer, the weights, the algorithms) and its two entry points.
// The jobs are in files of their own: device.cpp (device, stream, handle), weights.cpp (parameter
// upload), convolution_algorithms.cpp (the convolutions' algorithm choice), convolution.cpp
// (convolution steps), steps.cpp (the other steps), passes.cpp (a pass: copies, CUDA graphs, timing).
//
// Batch sizes: cuDNN tensor descriptors encode N. forward() re-sets the plan's existing activation
// descriptors (cudnnSetTensor4dDescriptor, a host-side call, no creation) when n differs from the
// previous call; the other descriptors do not depend on n. The workspace of each convolution is
// queried at n = 1 and max_batch when it is chosen, and at each other batch size on that size's
// first pass, which grows it if needed (convolution_algorithms.cpp, prepare_batch_size).
#include "backends/cudnn/executor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "backends/cudnn/device.h"
#include "backends/cudnn/top_k.h"

namespace infer::cudnn {

Executor::Executor(const Network& network, int max_batch, const GpuOptions& options)
    : options_(options),
      device_name_(select_device()),
      description_(describe_device(device_name_)),
      stream_(create_stream()),
      h2d_start_(Event::create("timing events")),
      h2d_end_(Event::create("timing events")),
      d2h_start_(Event::create("timing events")),
      d2h_end_(Event::create("timing events")),
      handle_((startup_.mark("CUDA context: device, stream, events"), create_handle(stream_.get()))),
      kernels_((startup_.mark("cuDNN handle"), Kernels())),  // after the stream: the device's context is current
      plan_((startup_.mark("kernels: module load"),
             Plan(network, max_batch, PlanOptions{options.precision, options.fold_batchnorm}))) {
  startup_.mark("plan: steps and descriptors");
  const std::size_t batch = static_cast<std::size_t>(max_batch);
  cudaStream_t stream = stream_.get();
  const SyncOnUnwind sync_on_throw(stream);  // a local of the body: destroyed before the members are
  log(Kernels::route());

  // Zeroed once so that no buffer ever holds garbage.
  for (std::size_t bytes : plan_.buffer_bytes()) {
    buffers_.emplace_back(batch * bytes, "activation buffers");
    INFER_CUDA_CHECK("activation buffers", fill_zero(buffers_.back().out(), stream));
  }
  // The border of each ceil-mode max pooling's padded buffer: -inf, which no window lets win; the
  // interior is overwritten by every pass (plan.h, Step::padded).
  for (const Step& step : plan_.steps()) {
    if (!step.padded) continue;
    const Layer& layer = network.layers()[step.first_layer];
    INFER_CUDNN_CHECK(layer_context(layer),
                      fill_tensor(handle_.get(), TensorOut(step.padded.get(), buffers_[step.padded_buffer].out()),
                                  plan_.activations()[step.input()].type, -std::numeric_limits<float>::infinity()));
  }
  upload_weights();

  std::size_t largest_output = network.input().dims.size();
  for (const Layer& layer : network.layers()) largest_output = std::max(largest_output, layer.out.size());
  const std::size_t classes = network.output_dims().size();
  input_staging_ = PinnedBuffer(batch * network.input().dims.size() * sizeof(float), "input staging buffer");
  output_staging_ = PinnedBuffer(batch * largest_output * sizeof(float), "output staging buffer");
  top_classes_ = DeviceBuffer(batch * classes * sizeof(int), "top-k buffers");
  top_scores_ = DeviceBuffer(batch * classes * sizeof(float), "top-k buffers");
  top_staging_ = PinnedBuffer(batch * classes * (sizeof(int) + sizeof(float)), "top-k staging buffer");
  if (plan_.storage_type() != CUDNN_DATA_FLOAT) {
    input_float_ = DeviceBuffer(input_staging_.bytes(), "float input buffer");
    output_float_ = DeviceBuffer(output_staging_.bytes(), "float output buffer");
  }

  // z of cudnnConvolutionBiasActivationForward (convolution.cpp) in the calls without a residual
  // add: alpha2 = 0 scales it away, but
  // should cuDNN read it anyway, 0 * NaN or 0 * Inf left in an output buffer by an earlier batch
  // would be NaN. A buffer of zeros that nothing else writes cannot carry such values. Sized for the
  // largest output a fused call may write (any activation of a convolution step, partial runs
  // included) at max_batch, as float: a half step that falls back (convolution.cpp) writes float.
  // All-zero bytes are 0.0 in float and in half.
  std::size_t z_bytes = 0;
  for (const Step& step : plan_.steps()) {
    if (step.kind != StepKind::Convolution) continue;
    for (std::size_t a = step.first_layer + 1; a <= step.output(); ++a) {
      z_bytes = std::max(z_bytes, batch * plan_.activations()[a].dims.size() * sizeof(float));
    }
  }
  zero_z_ = ConstantBuffer::zeros(z_bytes, stream, "fused convolution z operand");

  startup_.mark("buffers and weights");
  choose_algorithms();  // its probes run the fused call: after the memset, on the same stream
  INFER_CUDA_CHECK("executor setup", cudaStreamSynchronize(stream));
  startup_.mark("final synchronisation");
}

TensorIn Executor::tensor_in(std::size_t activation) const {
  return TensorIn(plan_.activations()[activation].desc.get(), in(activation));
}

TensorOut Executor::tensor_out(std::size_t activation) {
  return TensorOut(plan_.activations()[activation].desc.get(), out(activation));
}

DeviceIn Executor::in(std::size_t activation) const { return buffers_[plan_.activations()[activation].buffer].in(); }

DeviceOut Executor::out(std::size_t activation) { return buffers_[plan_.activations()[activation].buffer].out(); }

void Executor::log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

void Executor::forward(const float* input, int n, float* output, std::size_t layer_count) {
  last_timing_.reset();  // until this call's pass completes
  const std::vector<Layer>& layers = plan_.network().layers();
  if (n < 1 || n > plan_.max_batch()) {
    throw std::invalid_argument("batch size " + std::to_string(n) + " is outside [1, " +
                                std::to_string(plan_.max_batch()) + "]");
  }
  if (layer_count < 1 || layer_count > layers.size()) {
    throw std::invalid_argument("layer_count " + std::to_string(layer_count) + " is outside [1, " +
                                std::to_string(layers.size()) + "]");
  }
  if (!input || !output) throw std::invalid_argument("input and output must not be null");
  execute(Pass{n, layer_count, 0}, input);
  const std::size_t out_bytes = static_cast<std::size_t>(n) * layers[layer_count - 1].out.size() * sizeof(float);
  std::memcpy(output, output_staging_.floats(), out_bytes);
}

void Executor::top_k(const float* input, int n, int k, int* classes, float* scores) {
  last_timing_.reset();  // until this call's pass completes
  const std::vector<Layer>& layers = plan_.network().layers();
  if (n < 1 || n > plan_.max_batch()) {
    throw std::invalid_argument("batch size " + std::to_string(n) + " is outside [1, " +
                                std::to_string(plan_.max_batch()) + "]");
  }
  const std::size_t size = plan_.network().output_dims().size();
  // A size beyond the kernel's limit is reported as kTopKMaxClasses + 1 (it may not fit an int).
  const int outputs = size > static_cast<std::size_t>(kTopKMaxClasses) ? kTopKMaxClasses + 1 : static_cast<int>(size);
  check_top_k_limits(n, outputs, k);
  if (!input || !classes || !scores) throw std::invalid_argument("input, classes and scores must not be null");
  execute(Pass{n, layers.size(), k}, input);
  const std::size_t count = static_cast<std::size_t>(n) * static_cast<std::size_t>(k);
  const std::size_t scores_at = plan_.max_batch() * size * sizeof(int);  // top_staging_: ints, then floats
  std::memcpy(classes, top_staging_.ints(), count * sizeof(int));
  std::memcpy(scores, reinterpret_cast<const unsigned char*>(top_staging_.ints()) + scores_at, count * sizeof(float));
}

}  // namespace infer::cudnn

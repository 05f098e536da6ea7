// Execution of a Plan on one device. Everything is allocated and chosen in the constructor.
//
// Batch sizes: cuDNN tensor descriptors encode N. forward() re-sets the plan's existing activation
// descriptors (cudnnSetTensor4dDescriptor, a host-side call, no creation) when n differs from the
// previous call; the other descriptors do not depend on n. Algorithms and the workspace are chosen
// at both ends, n = 1 and n = max_batch, so that no batch size needs a larger workspace.
#include "executor.h"

#include "../nvidia_versions.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace infer::cudnn {
namespace {

constexpr float kOne = 1.0f;
constexpr float kZero = 0.0f;

// Errors that mean "this machine cannot run CUDA programs" rather than "a call failed".
bool means_unavailable(cudaError_t e) {
  switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorStubLibrary:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemNotReady:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice: return true;
    default: return false;
  }
}

void require_device_call(const char* call, cudaError_t e) {
  if (e == cudaSuccess) return;
  const std::string text = std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (means_unavailable(e)) {
    throw GpuUnavailableError(text + "; the GPU backend needs a CUDA device and an NVIDIA driver for CUDA " +
                              cuda_version_string(CUDART_VERSION) + " or later");
  }
  throw GpuError(text);
}

// Selects device 0 and returns its description ("NVIDIA H200 (sm_90), cuDNN 9.19.0, CUDA runtime 13.0").
std::string select_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  int driver = 0;
  if (status == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0) {
    // The runtime says "insufficient" also when there is no driver at all; cudaDriverGetVersion
    // reports 0 exactly when no driver (libcuda.so.1) could be loaded.
    throw GpuUnavailableError("no NVIDIA driver is installed (the CUDA driver library libcuda.so.1 could not be "
                              "loaded; cudaGetDeviceCount: cudaErrorInsufficientDriver)");
  }
  require_device_call("cudaGetDeviceCount", status);
  if (count < 1) throw GpuUnavailableError("cudaGetDeviceCount found no CUDA device");
  require_device_call("cudaSetDevice(0)", cudaSetDevice(0));
  cudaDeviceProp prop{};
  INFER_CUDA_CHECK("device 0", cudaGetDeviceProperties(&prop, 0));
  int runtime = 0;
  INFER_CUDA_CHECK("device 0", cudaRuntimeGetVersion(&runtime));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + "), cuDNN " +
         cudnn_version_string(cudnnGetVersion()) + ", CUDA runtime " + cuda_version_string(runtime);
}

Stream create_stream() {
  cudaStream_t stream = nullptr;
  // Non-blocking: no implicit synchronisation with the legacy default stream; every copy and
  // kernel of this executor goes to this stream.
  INFER_CUDA_CHECK("executor stream", cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return Stream(stream);
}

CudnnHandle create_handle(cudaStream_t stream) {
  if (cudnnGetVersion() / 10000 != CUDNN_MAJOR) {
    throw GpuUnavailableError("the loaded cuDNN is " + cudnn_version_string(cudnnGetVersion()) +
                              " but the GPU backend was built for cuDNN " + std::to_string(CUDNN_MAJOR));
  }
  const std::pair<const char*, cudnnStatus_t> checks[] = {{"cudnnOpsVersionCheck", cudnnOpsVersionCheck()},
                                                          {"cudnnCnnVersionCheck", cudnnCnnVersionCheck()}};
  for (const auto& [call, status] : checks) {
    if (status != CUDNN_STATUS_SUCCESS) {
      throw GpuUnavailableError(std::string(call) + " failed: " + detail::cudnn_error_text(status) +
                                "; a cuDNN sub-library is missing or of another version");
    }
  }
  cudnnHandle_t handle = nullptr;
  const cudnnStatus_t status = cudnnCreate(&handle);
  if (status != CUDNN_STATUS_SUCCESS) {
    // cuDNN unusable here (a missing or mismatched sub-library, an unsupported GPU) means "use the
    // CPU"; anything else (out of memory on a busy GPU, say) is a failure to report, not hide.
    const int category = CUDNN_STATUS_CATEGORY(status);
    const std::string text = detail::one_line("cudnnCreate failed: " + detail::cudnn_error_text(status));
    if (category == CUDNN_STATUS_NOT_SUPPORTED || category == CUDNN_STATUS_NOT_INITIALIZED ||
        status == CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH || status == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED) {
      throw GpuUnavailableError(text);
    }
    throw GpuError(text);
  }
  CudnnHandle owned(handle);
  INFER_CUDNN_CHECK("cuDNN handle", cudnnSetStream(handle, stream));
  return owned;
}

}  // namespace

Executor::Executor(const Network& network, int max_batch)
    : description_(select_device()),
      stream_(create_stream()),
      handle_(create_handle(stream_.get())),
      plan_(network, max_batch) {
  const std::size_t batch = static_cast<std::size_t>(max_batch);
  cudaStream_t stream = stream_.get();

  // Zeroed once so that no buffer ever holds garbage (the fused call reads y as z, times 0).
  for (std::size_t floats : plan_.buffer_floats()) {
    buffers_.emplace_back(batch * floats * sizeof(float), "activation buffers");
    INFER_CUDA_CHECK("activation buffers", cudaMemsetAsync(buffers_.back().get(), 0, buffers_.back().bytes(), stream));
  }

  std::size_t zero_bias_floats = 0;
  for (const Layer& layer : network.layers()) {
    const std::string context = layer_context(layer);
    auto upload = [&](const std::vector<float>& values) {
      DeviceBuffer b(values.size() * sizeof(float), context);
      if (!values.empty()) {
        INFER_CUDA_CHECK(context, cudaMemcpyAsync(b.get(), values.data(), b.bytes(), cudaMemcpyHostToDevice, stream));
      }
      return b;
    };
    const LayerParams& p = layer.params;
    weights_.push_back(LayerWeights{upload(p.weight), upload(p.bias), upload(p.running_mean), upload(p.running_var)});
    if ((layer.kind == LayerKind::Conv2d || layer.kind == LayerKind::Linear) && p.bias.empty()) {
      zero_bias_floats = std::max(zero_bias_floats, static_cast<std::size_t>(layer.out.c));
    }
  }
  zero_bias_ = DeviceBuffer(zero_bias_floats * sizeof(float), "zero bias");
  if (zero_bias_floats > 0) {
    INFER_CUDA_CHECK("zero bias", cudaMemsetAsync(zero_bias_.get(), 0, zero_bias_.bytes(), stream));
  }

  std::size_t largest_output = network.input().dims.size();
  for (const Layer& layer : network.layers()) largest_output = std::max(largest_output, layer.out.size());
  input_staging_ = PinnedBuffer(batch * network.input().dims.size() * sizeof(float), "input staging buffer");
  output_staging_ = PinnedBuffer(batch * largest_output * sizeof(float), "output staging buffer");

  choose_algorithms();
  INFER_CUDA_CHECK("executor setup", cudaStreamSynchronize(stream));
}

float* Executor::buffer(std::size_t activation) const {
  return buffers_[plan_.activations()[activation].buffer].floats();
}

void Executor::forward(const float* input, int n, float* output, std::size_t layer_count) {
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
  plan_.set_batch(n);
  try {
    run(input, n, output, layer_count);
  } catch (...) {
    // Work queued before the failure may still read the pinned staging buffer: let it finish
    // before the next call overwrites it (its own error, if any, is the one already thrown).
    static_cast<void>(cudaStreamSynchronize(stream_.get()));
    throw;
  }
}

void Executor::run(const float* input, int n, float* output, std::size_t layer_count) {
  const std::vector<Layer>& layers = plan_.network().layers();
  cudaStream_t stream = stream_.get();

  const std::size_t in_bytes = static_cast<std::size_t>(n) * plan_.network().input().dims.size() * sizeof(float);
  std::memcpy(input_staging_.floats(), input, in_bytes);
  INFER_CUDA_CHECK("network input", cudaMemcpyAsync(buffer(0), input_staging_.floats(), in_bytes,
                                                    cudaMemcpyHostToDevice, stream));
  for (std::size_t i = 0; i < plan_.steps().size(); ++i) {
    const Step& step = plan_.steps()[i];
    if (step.first_layer >= layer_count) break;
    run_step(i, step.last_layer < layer_count);
  }
  const Layer& last = layers[layer_count - 1];
  const std::size_t out_bytes = static_cast<std::size_t>(n) * last.out.size() * sizeof(float);
  INFER_CUDA_CHECK(layer_context(last), cudaMemcpyAsync(output_staging_.floats(), buffer(layer_count), out_bytes,
                                                        cudaMemcpyDeviceToHost, stream));
  INFER_CUDA_CHECK(layer_context(last), cudaStreamSynchronize(stream));
  std::memcpy(output, output_staging_.floats(), out_bytes);
}

// `whole`: every layer of the step is to run; false when the forward pass ends at the convolution
// of a convolution+ReLU step, which then runs without its ReLU.
void Executor::run_step(std::size_t step_index, bool whole) {
  const Step& step = plan_.steps()[step_index];
  const Layer& layer = plan_.network().layers()[step.first_layer];
  cudnnHandle_t handle = handle_.get();
  const Activation& x = plan_.activations()[step.input()];
  const Activation& y = plan_.activations()[step.output()];
  const LayerWeights& w = weights_[step.first_layer];
  switch (step.kind) {
    case StepKind::Convolution:
      run_convolution(step, convolutions_[step_index], step.fused_relu && whole);
      return;
    case StepKind::BatchNorm:
      INFER_CUDNN_CHECK(layer_context(layer),
                        cudnnBatchNormalizationForwardInference(
                            handle, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x.desc.get(), buffer(step.input()),
                            y.desc.get(), buffer(step.output()), step.bn_params.get(), w.weight.get(), w.bias.get(),
                            w.running_mean.get(), w.running_var.get(), step.epsilon));
      return;
    case StepKind::Relu:
      INFER_CUDNN_CHECK(layer_context(layer),
                        cudnnActivationForward(handle, plan_.relu(), &kOne, x.desc.get(), buffer(step.input()), &kZero,
                                               y.desc.get(), buffer(step.output())));
      return;
    case StepKind::Pooling:
      INFER_CUDNN_CHECK(layer_context(layer),
                        cudnnPoolingForward(handle, step.pooling.get(), &kOne, x.desc.get(), buffer(step.input()),
                                            &kZero, y.desc.get(), buffer(step.output())));
      return;
    case StepKind::Softmax:
      INFER_CUDNN_CHECK(layer_context(layer),
                        cudnnSoftmaxForward(handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &kOne,
                                            x.desc.get(), buffer(step.input()), &kZero, y.desc.get(),
                                            buffer(step.output())));
      return;
    case StepKind::Alias: return;  // the output is the input's buffer
  }
}

}  // namespace infer::cudnn

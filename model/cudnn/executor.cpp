// Execution of a Plan on one device. Everything is allocated and chosen in the constructor.
//
// Batch sizes: cuDNN tensor descriptors encode N. forward() re-sets the plan's existing activation
// descriptors (cudnnSetTensor4dDescriptor, a host-side call, no creation) when n differs from the
// previous call; the other descriptors do not depend on n. Algorithms and the workspace are chosen
// at both ends, n = 1 and n = max_batch, so that no batch size needs a larger workspace.
//
// A pass (enqueue()): input copy from the pinned staging buffer, [Fp16: conversion to half NHWC],
// every step's cuDNN calls, [a half output converted to float], [the top-k kernel], the copy of
// the results into pinned staging. Nothing in it allocates, creates a descriptor or synchronises;
// execute() adds the one cudaStreamSynchronize.
//
// Timing: four events, created once, are recorded on the stream in every pass: before and after
// the input copy, before and after the result copy. After the sync, cudaEventElapsedTime turns them
// into last_timing(). Inside a stream capture a plain cudaEventRecord is not an event-record node:
// it only marks a fork/join point between streams (CUDA programming guide, "Cross-stream
// dependencies and events"), and after a replay the event still holds the record of the direct run.
// So the capture records them with cudaEventRecordExternal, which makes each an event-record node
// that re-records the event at every launch of the graph; the flag is meant for captures only, so
// direct runs use plain records. Either way the split covers graphed and direct passes. The first
// call of a graphed pass reads its timing after its direct run, before the capture re-records them.
//
// CUDA graphs: the first call of a pass (batch size, layer count, k) runs it directly, then
// captures it (cudaStreamCaptureModeThreadLocal) and instantiates the graph; later calls of that
// pass replay it with cudaGraphLaunch. Running first matters: cuDNN may compile a kernel or
// allocate on its first call for a shape, which stream capture forbids. set_batch() runs before
// the capture: each cuDNN call reads its descriptors when it is made and bakes their values into
// the kernels it enqueues, so a graph keeps the batch size it was captured with, whatever the
// descriptors say later. The addresses baked in (buffers, pinned staging, workspace) live as long
// as the executor. A capture or instantiation that fails is ended cleanly, logged, and that pass
// runs its calls directly from then on.
#include "executor.h"

#include "../fold.h"
#include "../nvidia_versions.h"
#include "convert.h"
#include "half.h"
#include "top_k.h"

#include <algorithm>
#include <cstring>
#include <exception>
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

// Errors that driver_types.h documents as leaving the process in an inconsistent state: every later
// CUDA call returns them again, and only a restart recovers. cudaErrorECCUncorrectable is not
// documented so, but an uncorrectable memory error leaves the results of any further work suspect.
bool leaves_context_unusable(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
    case cudaErrorECCUncorrectable: return true;
    default: return false;
  }
}

// Synchronises a stream when it goes out of scope because of an exception, so that work already
// queued (copies from host memory about to be freed, kernels on device buffers about to be
// released) completes before the objects it uses are destroyed. Its own error is ignored: the
// exception in flight is the one to report.
class SyncOnUnwind {
 public:
  explicit SyncOnUnwind(cudaStream_t stream) : stream_(stream) {}
  ~SyncOnUnwind() {
    if (std::uncaught_exceptions() > exceptions_) static_cast<void>(cudaStreamSynchronize(stream_));
  }
  SyncOnUnwind(const SyncOnUnwind&) = delete;
  SyncOnUnwind& operator=(const SyncOnUnwind&) = delete;

 private:
  cudaStream_t stream_;
  int exceptions_ = std::uncaught_exceptions();
};

void require_device_call(const char* call, cudaError_t e) {
  if (e == cudaSuccess) return;
  const std::string text = std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (means_unavailable(e)) {
    throw GpuUnavailableError(text + "; the GPU backend needs a CUDA device and an NVIDIA driver for CUDA " +
                              cuda_version_string(CUDART_VERSION) + " or later");
  }
  throw GpuError(text);
}

// Selects device 0 and returns its name and compute capability: "NVIDIA H200 (sm_90)", the device
// part of autotune keys.
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
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

// "NVIDIA H200 (sm_90), cuDNN 9.19.0, CUDA runtime 13.0"
std::string describe_device(const std::string& name) {
  int runtime = 0;
  INFER_CUDA_CHECK("device 0", cudaRuntimeGetVersion(&runtime));
  return name + ", cuDNN " + cudnn_version_string(cudnnGetVersion()) + ", CUDA runtime " + cuda_version_string(runtime);
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

// The weight of a conv/linear layer (or its folded form) as the plan stores it: float KCRS, or
// half KRSC for NHWC (Fp16). Linear weights [out, in] are [K, C, 1, 1].
std::vector<unsigned char> filter_bytes(const Plan& plan, const Layer& layer, const std::vector<float>& weight) {
  std::vector<unsigned char> out;
  if (plan.storage_type() == CUDNN_DATA_FLOAT) {
    out.resize(weight.size() * sizeof(float));
    std::memcpy(out.data(), weight.data(), out.size());
    return out;
  }
  const std::size_t k = static_cast<std::size_t>(layer.out.c);
  const std::size_t rs = layer.kind == LayerKind::Conv2d
                             ? static_cast<std::size_t>(layer.conv().kernel_h) * layer.conv().kernel_w
                             : 1;
  const std::size_t c = weight.size() / (k * rs);
  std::vector<std::uint16_t> half(weight.size());
  for (std::size_t ki = 0; ki < k; ++ki) {
    for (std::size_t ci = 0; ci < c; ++ci) {
      for (std::size_t r = 0; r < rs; ++r) {
        half[(ki * rs + r) * c + ci] = float_to_half(weight[(ki * c + ci) * rs + r]);
      }
    }
  }
  out.resize(half.size() * sizeof(std::uint16_t));
  std::memcpy(out.data(), half.data(), out.size());
  return out;
}

// A bias in the plan's storage type.
std::vector<unsigned char> bias_bytes(const Plan& plan, const std::vector<float>& bias) {
  std::vector<unsigned char> out;
  if (plan.storage_type() == CUDNN_DATA_FLOAT) {
    out.resize(bias.size() * sizeof(float));
    std::memcpy(out.data(), bias.data(), out.size());
    return out;
  }
  out.resize(bias.size() * sizeof(std::uint16_t));
  for (std::size_t i = 0; i < bias.size(); ++i) {
    const std::uint16_t h = float_to_half(bias[i]);
    std::memcpy(out.data() + i * sizeof h, &h, sizeof h);
  }
  return out;
}

std::vector<unsigned char> float_bytes(const std::vector<float>& values) {
  std::vector<unsigned char> out(values.size() * sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace

Executor::Executor(const Network& network, int max_batch, const GpuOptions& options)
    : options_(options),
      device_name_(select_device()),
      description_(describe_device(device_name_)),
      stream_(create_stream()),
      h2d_start_(Event::create("timing events")),
      h2d_end_(Event::create("timing events")),
      d2h_start_(Event::create("timing events")),
      d2h_end_(Event::create("timing events")),
      handle_(create_handle(stream_.get())),
      plan_(network, max_batch, PlanOptions{options.precision, options.fold_batchnorm}) {
  const std::size_t batch = static_cast<std::size_t>(max_batch);
  cudaStream_t stream = stream_.get();
  const SyncOnUnwind sync_on_throw(stream);  // a local of the body: destroyed before the members are

  // Zeroed once so that no buffer ever holds garbage.
  for (std::size_t bytes : plan_.buffer_bytes()) {
    buffers_.emplace_back(batch * bytes, "activation buffers");
    INFER_CUDA_CHECK("activation buffers", cudaMemsetAsync(buffers_.back().get(), 0, buffers_.back().bytes(), stream));
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

  // z of cudnnConvolutionBiasActivationForward (convolution.cpp): alpha2 = 0 scales it away, but
  // should cuDNN read it anyway, 0 * NaN or 0 * Inf left in an output buffer by an earlier batch
  // would be NaN. A buffer of zeros that nothing else writes cannot carry such values. Sized for the
  // largest output a fused call may write (any activation of a convolution step, partial runs
  // included) at max_batch; all-zero bytes are 0.0 in float and in half.
  std::size_t z_bytes = 0;
  for (const Step& step : plan_.steps()) {
    if (step.kind != StepKind::Convolution) continue;
    for (std::size_t a = step.first_layer + 1; a <= step.output(); ++a) {
      const Activation& y = plan_.activations()[a];
      z_bytes = std::max(z_bytes, batch * y.dims.size() * y.element_bytes());
    }
  }
  zero_z_ = DeviceBuffer(z_bytes, "fused convolution z operand");
  if (z_bytes > 0) INFER_CUDA_CHECK("fused convolution z operand", cudaMemsetAsync(zero_z_.get(), 0, z_bytes, stream));

  choose_algorithms();  // its probes run the fused call: after the memset, on the same stream
  INFER_CUDA_CHECK("executor setup", cudaStreamSynchronize(stream));
}

// Every parameter on the device, once: conv/linear weights and biases in the plan's storage type,
// batch-norm parameters as float, and for each folded step fold.h's weights and bias. The host
// copies live until the stream has consumed them (the constructor synchronises).
void Executor::upload_weights() {
  const std::vector<Layer>& layers = plan_.network().layers();
  cudaStream_t stream = stream_.get();
  std::vector<std::vector<unsigned char>> host;  // kept alive until the copies are done
  const SyncOnUnwind sync_on_throw(stream);       // ... also when an upload throws
  auto upload = [&](std::vector<unsigned char> bytes, const std::string& context) {
    DeviceBuffer b(bytes.size(), context);
    if (!bytes.empty()) {
      INFER_CUDA_CHECK(context, cudaMemcpyAsync(b.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream));
    }
    host.push_back(std::move(bytes));
    return b;
  };
  std::size_t zero_bias_channels = 0;
  for (const Layer& layer : layers) {
    const std::string context = layer_context(layer);
    const LayerParams& p = layer.params;
    LayerWeights w;
    if (layer.kind == LayerKind::Conv2d || layer.kind == LayerKind::Linear) {
      w.weight = upload(filter_bytes(plan_, layer, p.weight), context);
      w.bias = upload(bias_bytes(plan_, p.bias), context);
      if (p.bias.empty()) zero_bias_channels = std::max(zero_bias_channels, static_cast<std::size_t>(layer.out.c));
    } else {
      w.weight = upload(float_bytes(p.weight), context);
      w.bias = upload(float_bytes(p.bias), context);
      w.running_mean = upload(float_bytes(p.running_mean), context);
      w.running_var = upload(float_bytes(p.running_var), context);
    }
    weights_.push_back(std::move(w));
  }
  for (const Step& step : plan_.steps()) {
    if (!step.folded_bn) continue;
    const Layer& producer = layers[step.first_layer];
    const FoldedParams folded = fold_batchnorm(producer, layers[step.first_layer + 1]);
    const std::string context = layer_context(producer);
    weights_[step.first_layer].folded_weight = upload(filter_bytes(plan_, producer, folded.weight), context);
    weights_[step.first_layer].folded_bias = upload(bias_bytes(plan_, folded.bias), context);
  }
  zero_bias_ = DeviceBuffer(zero_bias_channels * sizeof(float), "zero bias");  // zero bits: 0.0f and half 0
  if (zero_bias_channels > 0) {
    INFER_CUDA_CHECK("zero bias", cudaMemsetAsync(zero_bias_.get(), 0, zero_bias_.bytes(), stream));
  }
  INFER_CUDA_CHECK("weight upload", cudaStreamSynchronize(stream));
}

void* Executor::buffer(std::size_t activation) const {
  return buffers_[plan_.activations()[activation].buffer].get();
}

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

void Executor::execute(const Pass& pass, const float* input) {
  if (!broken_.empty()) {
    throw GpuError("the CUDA context is unusable after " + broken_ +
                   "; restart the process (or use the CPU backend) to run more batches");
  }
  plan_.set_batch(pass.n);  // before any capture: the calls bake the descriptors' values in
  const std::size_t in_bytes =
      static_cast<std::size_t>(pass.n) * plan_.network().input().dims.size() * sizeof(float);
  std::memcpy(input_staging_.floats(), input, in_bytes);
  bool timing_read = false;
  try {
    if (options_.cuda_graphs) {
      timing_read = replay(pass);
    } else {
      enqueue(pass, false);
    }
    INFER_CUDA_CHECK("forward pass", cudaStreamSynchronize(stream_.get()));
  } catch (...) {
    // Work queued before the failure may still read the pinned staging buffer: let it finish
    // before the next call overwrites it (the error already thrown is the one reported). Then clear
    // the runtime's last error, so that the next pass's launch checks see their own errors only.
    // An error that leaves the context unusable cannot be cleared: remember it, so that later
    // calls say so instead of failing at some unrelated call.
    last_timing_.reset();
    const cudaError_t synced = cudaStreamSynchronize(stream_.get());
    const cudaError_t last = cudaGetLastError();
    for (const cudaError_t e : {synced, last}) {
      if (broken_.empty() && leaves_context_unusable(e)) {
        broken_ = std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
      }
    }
    throw;
  }
  if (!timing_read) read_timing();
}

// Every event of the pass has completed (the stream was synchronised). A failure here loses the
// timing, not the results: last_timing_ stays empty, and the first failure is logged.
void Executor::read_timing() {
  const std::pair<cudaEvent_t, cudaEvent_t> spans[] = {{h2d_start_.get(), h2d_end_.get()},
                                                       {h2d_end_.get(), d2h_start_.get()},
                                                       {d2h_start_.get(), d2h_end_.get()},
                                                       {h2d_start_.get(), d2h_end_.get()}};
  double ms[4] = {};
  for (std::size_t i = 0; i < 4; ++i) {
    float elapsed = 0.0f;
    const cudaError_t status = cudaEventElapsedTime(&elapsed, spans[i].first, spans[i].second);
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());  // not sticky: the next pass must not see it
      if (!timing_failure_logged_) {
        timing_failure_logged_ = true;
        log(std::string("device timing unavailable: cudaEventElapsedTime failed: ") + cudaGetErrorName(status) + " (" +
            cudaGetErrorString(status) + ")");
      }
      return;
    }
    ms[i] = elapsed;
  }
  last_timing_ = BatchTiming{ms[0], ms[1], ms[2], ms[3]};
}

bool Executor::replay(const Pass& pass) {
  auto it = graphs_.find(pass);
  if (it == graphs_.end()) {
    // First call of this pass: run it directly (the results), then capture it for the next calls.
    // Its timing is read before the capture, which re-records the events as graph nodes.
    enqueue(pass, false);
    INFER_CUDA_CHECK("forward pass", cudaStreamSynchronize(stream_.get()));
    read_timing();
    if (graphs_.size() >= kMaxGraphs) {
      const auto oldest = std::min_element(graphs_.begin(), graphs_.end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      });
      graphs_.erase(oldest);
    }
    GraphEntry entry = capture(pass);
    entry.last_use = ++graph_clock_;
    graphs_.emplace(pass, std::move(entry));
    return true;
  }
  it->second.last_use = ++graph_clock_;
  if (it->second.direct) {
    enqueue(pass, false);
    return false;
  }
  INFER_CUDA_CHECK("CUDA graph", cudaGraphLaunch(it->second.exec.get(), stream_.get()));
  return false;
}

Executor::GraphEntry Executor::capture(const Pass& pass) {
  const std::string what = "n = " + std::to_string(pass.n) + ", " + std::to_string(pass.layer_count) + " layers" +
                           (pass.k > 0 ? ", top-" + std::to_string(pass.k) : std::string());
  GraphEntry entry;
  cudaStream_t stream = stream_.get();
  std::string why;
  cudaError_t status = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (status != cudaSuccess) {
    why = std::string("cudaStreamBeginCapture: ") + cudaGetErrorName(status);
  } else {
    try {
      enqueue(pass, true);
    } catch (const std::exception& e) {
      why = e.what();
    }
    cudaGraph_t raw = nullptr;
    status = cudaStreamEndCapture(stream, &raw);  // ends the capture even when it was invalidated
    const Graph graph(raw);
    if (why.empty() && status != cudaSuccess) why = std::string("cudaStreamEndCapture: ") + cudaGetErrorName(status);
    if (why.empty()) {
      cudaGraphExec_t exec = nullptr;
      status = cudaGraphInstantiate(&exec, graph.get(), 0);
      if (status == cudaSuccess) {
        entry.exec = GraphExec(exec);
      } else {
        why = std::string("cudaGraphInstantiate: ") + cudaGetErrorName(status);
      }
    }
  }
  if (!why.empty()) {
    // Capture errors are not sticky: clear the runtime's and cuDNN's last error and go on without.
    static_cast<void>(cudaGetLastError());
    char discard[256];
    cudnnGetLastErrorString(discard, sizeof discard);
    entry.direct = true;
    log("CUDA graph for " + what + " not used (" + detail::one_line(why) + "); its calls run directly");
  } else {
    log("CUDA graph captured for " + what);
  }
  return entry;
}

// The float NCHW values of an activation on the device: its own buffer, or (half) converted into
// output_float_.
const float* Executor::float_output(std::size_t activation, int n) {
  const Activation& a = plan_.activations()[activation];
  if (a.type == CUDNN_DATA_FLOAT) return static_cast<const float*>(buffer(activation));
  const std::string context = activation == 0 ? std::string("network input")
                                              : layer_context(plan_.network().layers()[activation - 1]);
  INFER_CUDA_CHECK(context, launch_half_nhwc_to_float_nchw(buffer(activation), output_float_.floats(), n, a.dims.c,
                                                           a.dims.h, a.dims.w, stream_.get()));
  return output_float_.floats();
}

void Executor::record(cudaEvent_t event, bool capturing) {
  const unsigned int flags = capturing ? cudaEventRecordExternal : cudaEventRecordDefault;
  INFER_CUDA_CHECK("timing event", cudaEventRecordWithFlags(event, stream_.get(), flags));
}

void Executor::enqueue(const Pass& pass, bool capturing) {
  const std::vector<Layer>& layers = plan_.network().layers();
  cudaStream_t stream = stream_.get();
  const Dims& in = plan_.network().input().dims;
  const std::size_t in_bytes = static_cast<std::size_t>(pass.n) * in.size() * sizeof(float);
  record(h2d_start_.get(), capturing);
  if (plan_.storage_type() == CUDNN_DATA_FLOAT) {
    INFER_CUDA_CHECK("network input", cudaMemcpyAsync(buffer(0), input_staging_.floats(), in_bytes,
                                                      cudaMemcpyHostToDevice, stream));
    record(h2d_end_.get(), capturing);
  } else {
    INFER_CUDA_CHECK("network input", cudaMemcpyAsync(input_float_.get(), input_staging_.floats(), in_bytes,
                                                      cudaMemcpyHostToDevice, stream));
    record(h2d_end_.get(), capturing);  // the conversion below is compute
    INFER_CUDA_CHECK("network input", launch_float_nchw_to_half_nhwc(input_float_.floats(), buffer(0), pass.n, in.c,
                                                                     in.h, in.w, stream));
  }
  for (std::size_t i = 0; i < plan_.steps().size(); ++i) {
    if (plan_.steps()[i].first_layer >= pass.layer_count) break;
    run_step(i, pass.layer_count, capturing);
  }
  const Layer& last = layers[pass.layer_count - 1];
  const float* out = float_output(pass.layer_count, pass.n);
  if (pass.k == 0) {
    const std::size_t out_bytes = static_cast<std::size_t>(pass.n) * last.out.size() * sizeof(float);
    record(d2h_start_.get(), capturing);
    INFER_CUDA_CHECK(layer_context(last), cudaMemcpyAsync(output_staging_.floats(), out, out_bytes,
                                                          cudaMemcpyDeviceToHost, stream));
    record(d2h_end_.get(), capturing);
    return;
  }
  const int classes = static_cast<int>(last.out.size());
  INFER_CUDA_CHECK(layer_context(last), launch_top_k(out, pass.n, classes, pass.k, top_classes_.ints(),
                                                     top_scores_.floats(), stream));
  const std::size_t count = static_cast<std::size_t>(pass.n) * static_cast<std::size_t>(pass.k);
  unsigned char* staging = reinterpret_cast<unsigned char*>(top_staging_.ints());
  const std::size_t scores_at = plan_.max_batch() * last.out.size() * sizeof(int);
  record(d2h_start_.get(), capturing);
  INFER_CUDA_CHECK("top-k", cudaMemcpyAsync(staging, top_classes_.get(), count * sizeof(int), cudaMemcpyDeviceToHost,
                                            stream));
  INFER_CUDA_CHECK("top-k", cudaMemcpyAsync(staging + scores_at, top_scores_.get(), count * sizeof(float),
                                            cudaMemcpyDeviceToHost, stream));
  record(d2h_end_.get(), capturing);
}

// Runs the layers of a step that are below layer_count (a forward pass may stop inside a fused step).
void Executor::run_step(std::size_t step_index, std::size_t layer_count, bool capturing) {
  const Step& step = plan_.steps()[step_index];
  const Layer& layer = plan_.network().layers()[step.first_layer];
  cudnnHandle_t handle = handle_.get();
  const Activation& x = plan_.activations()[step.input()];
  const Activation& y = plan_.activations()[step.output()];
  const LayerWeights& w = weights_[step.first_layer];
  switch (step.kind) {
    case StepKind::Convolution:
      run_convolution(step, convolutions_[step_index], std::min(layer_count, step.last_layer + 1) - step.first_layer,
                      capturing);
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
    case StepKind::Softmax: {
      cudnnTensorDescriptor_t in_desc = x.desc.get();
      const void* in = buffer(step.input());
      if (step.nchw_input) {  // a half NHWC input: to float NCHW first (plan.h)
        const Dims& d = step.in;
        void* scratch = buffers_[step.scratch].get();
        INFER_CUDA_CHECK(layer_context(layer), launch_half_nhwc_to_float_nchw(in, static_cast<float*>(scratch),
                                                                              plan_.batch(), d.c, d.h, d.w,
                                                                              stream_.get()));
        in_desc = step.nchw_input.get();
        in = scratch;
      }
      INFER_CUDNN_CHECK(layer_context(layer),
                        cudnnSoftmaxForward(handle, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &kOne, in_desc,
                                            in, &kZero, y.desc.get(), buffer(step.output())));
      return;
    }
    case StepKind::Reorder:
      // Same type, NHWC to NCHW: the layout change cudnnTransformTensor is documented for.
      INFER_CUDNN_CHECK(layer_context(layer),
                        cudnnTransformTensor(handle, &kOne, x.desc.get(), buffer(step.input()), &kZero,
                                             step.nchw_input.get(), buffer(step.output())));
      return;
    case StepKind::Alias: return;  // the output is the input's buffer
  }
}

}  // namespace infer::cudnn

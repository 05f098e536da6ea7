// Error checks and RAII owners for the CUDA runtime and cuDNN, used by the cuDNN backend only.
//
// INFER_CUDA_CHECK(context, call), INFER_CUDNN_CHECK(context, call) and INFER_KERNEL_CHECK(context,
// call) (a LaunchStatus of kernels.h) evaluate `call` once and, if it fails, throw infer::GpuError
// whose what() is one line:
//   "<context>: <call text> failed: <error name> (<library's description>) at <file>:<line>"
// `context` names where we are (usually "layer 'conv1'"); it is evaluated only on failure, so it
// may build a string.
//
// Owners: every handle and descriptor is held by a move-only type that releases it in its
// destructor (errors on release are ignored: there is nobody to report them to). Memory and its
// typed views are in buffers.h.
#pragma once

// cuDNN 9 marks its whole descriptor-based ("legacy") API deprecated in favour of the graph API.
// This backend uses the legacy API on purpose: it covers every op of our small CNN with one call
// each, needs no graph building or engine-config selection, and runs on every GPU cuDNN 9 supports.
// The deprecation attributes are opt-in (CUDNN_WARN_DEPRECATED); make sure a build that turns them
// on globally still compiles these files, the only ones that must use the legacy API, warning-clean.
#ifdef CUDNN_WARN_DEPRECATED
#undef CUDNN_WARN_DEPRECATED
#endif
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "backends/cudnn/kernels.h"
#include "infer/errors.h"

namespace infer::cudnn {
namespace detail {

inline std::string_view base_name(std::string_view file) {
  const std::size_t slash = file.find_last_of('/');
  return slash == std::string_view::npos ? file : file.substr(slash + 1);
}

// One line: cuDNN's detailed messages may contain newlines.
inline std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

inline std::string failure_text(std::string_view context, const char* call, const std::string& error, const char* file,
                                int line) {
  std::string text(context);
  text += ": ";
  text += call;
  text += " failed: ";
  text += error;
  text += " at ";
  text += base_name(file);
  text += ':';
  text += std::to_string(line);
  return one_line(std::move(text));
}

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, std::string_view context,
                                          const char* file, int line) {
  const std::string error = std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
  throw GpuError(failure_text(context, call, error, file, line));
}

[[noreturn]] inline void throw_launch_error(const LaunchStatus& status, const char* call, std::string_view context,
                                            const char* file, int line) {
  throw GpuError(failure_text(context, call, std::string(status.name) + " (" + status.description + ")", file, line));
}

// The error string plus cuDNN's own explanation of the last failure, when it has one
// (cudnnGetLastErrorString: "(n <= 0) || (c <= 0) ...").
inline std::string cudnn_error_text(cudnnStatus_t status) {
  std::string error = cudnnGetErrorString(status);
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  if (detail[0] != '\0') error += std::string(" (") + detail + ")";
  return error;
}

[[noreturn]] inline void throw_cudnn_error(cudnnStatus_t status, const char* call, std::string_view context,
                                           const char* file, int line) {
  throw GpuError(failure_text(context, call, cudnn_error_text(status), file, line));
}

}  // namespace detail
}  // namespace infer::cudnn

#define INFER_CUDA_CHECK(context, call)                                                                   \
  do {                                                                                                    \
    const cudaError_t infer_cuda_status_ = (call);                                                        \
    if (infer_cuda_status_ != cudaSuccess) {                                                              \
      ::infer::cudnn::detail::throw_cuda_error(infer_cuda_status_, #call, (context), __FILE__, __LINE__); \
    }                                                                                                     \
  } while (false)

#define INFER_KERNEL_CHECK(context, call)                                                                     \
  do {                                                                                                        \
    const ::infer::cudnn::LaunchStatus infer_kernel_status_ = (call);                                         \
    if (!infer_kernel_status_.ok()) {                                                                         \
      ::infer::cudnn::detail::throw_launch_error(infer_kernel_status_, #call, (context), __FILE__, __LINE__); \
    }                                                                                                         \
  } while (false)

#define INFER_CUDNN_CHECK(context, call)                                                                    \
  do {                                                                                                      \
    const cudnnStatus_t infer_cudnn_status_ = (call);                                                       \
    if (infer_cudnn_status_ != CUDNN_STATUS_SUCCESS) {                                                      \
      ::infer::cudnn::detail::throw_cudnn_error(infer_cudnn_status_, #call, (context), __FILE__, __LINE__); \
    }                                                                                                       \
  } while (false)

namespace infer::cudnn {

// Owns one handle of an opaque pointer type; Destroy(handle) releases it. Move-only.
template <typename Handle, auto Destroy>
class Owned {
 public:
  Owned() = default;
  explicit Owned(Handle handle) : handle_(handle) {}
  ~Owned() { reset(); }
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, Handle{})) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Handle{}; }

 private:
  void reset() {
    if (handle_ != Handle{}) static_cast<void>(Destroy(handle_));
    handle_ = Handle{};
  }
  Handle handle_{};
};

// A cuDNN descriptor: create() calls Create and throws GpuError (naming context) if it fails.
template <typename Handle, auto Create, auto Destroy>
class Descriptor : public Owned<Handle, Destroy> {
 public:
  Descriptor() = default;
  static Descriptor create(std::string_view context) {
    Handle handle{};
    INFER_CUDNN_CHECK(context, Create(&handle));
    return Descriptor(handle);
  }

 private:
  explicit Descriptor(Handle handle) : Owned<Handle, Destroy>(handle) {}
};

using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using PoolingDesc = Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;
using ActivationDesc =
    Descriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;
using OpTensorDesc =
    Descriptor<cudnnOpTensorDescriptor_t, cudnnCreateOpTensorDescriptor, cudnnDestroyOpTensorDescriptor>;

// The cuDNN library context; bound to the device that was current when it was created.
using CudnnHandle = Owned<cudnnHandle_t, cudnnDestroy>;
using Stream = Owned<cudaStream_t, cudaStreamDestroy>;
// A captured CUDA graph, and its instantiation (what cudaGraphLaunch runs).
using Graph = Owned<cudaGraph_t, cudaGraphDestroy>;
using GraphExec = Owned<cudaGraphExec_t, cudaGraphExecDestroy>;

// A CUDA event on the current device. create() uses cudaEventDefault, so that the event records a
// time stamp (cudaEventElapsedTime refuses events made with cudaEventDisableTiming); it throws
// GpuError naming context if creation fails.
class Event : public Owned<cudaEvent_t, cudaEventDestroy> {
 public:
  Event() = default;
  static Event create(std::string_view context) {
    cudaEvent_t event = nullptr;
    INFER_CUDA_CHECK(context, cudaEventCreateWithFlags(&event, cudaEventDefault));
    return Event(event);
  }

 private:
  explicit Event(cudaEvent_t event) : Owned<cudaEvent_t, cudaEventDestroy>(event) {}
};

}  // namespace infer::cudnn

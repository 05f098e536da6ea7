// Library identity, versions, status strings, the per-thread last error, and the handle.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "tests/standin/call_count.h"
#include "tests/standin/cudnn/cudnn_internal.h"

namespace standin_cudnn {
namespace {
// cuDNN 9 cudnnGetLastErrorString(): the last error message of the calling thread.
thread_local std::string last_error;
}  // namespace

cudnnStatus_t fail(cudnnStatus_t s, const char* call, const std::string& detail) {
  last_error = std::string(call) + ": " + detail + " [infer CPU stand-in for cuDNN]";
  return s;
}

cudnnStatus_t cuda_failure(int cuda_error, const char* call) {
  return fail(CUDNN_STATUS_EXECUTION_FAILED_CUDART, call,
              "the CUDA runtime refused the work (cudaError_t " + std::to_string(cuda_error) + ")");
}

void* stream_of(cudnnHandle_t handle) { return handle->stream; }

bool decline_requested(const char* what) {
  const char* env = std::getenv("INFER_STANDIN_CUDNN_DECLINE");
  return env != nullptr && std::strstr(env, what) != nullptr;
}

}  // namespace standin_cudnn

using standin_cudnn::fail;

// This library's call counts (call_count.h).
STANDIN_DEFINE_CALL_COUNTS(infer_standin_cudnn_calls)

extern "C" {

__attribute__((visibility("default"))) const char* infer_standin_identity(void) {
  return "infer CPU stand-in for cuDNN 9.19 (test infrastructure, not NVIDIA's library)";
}

size_t cudnnGetVersion(void) {
  STANDIN_COUNT_CALL();
  return CUDNN_VERSION;
}

// The CUDA runtime version this cuDNN was built against: that of the stand-in's libcudart in the
// process (13000 or 12000), as a cuDNN for that CUDA major reports; INFER_STANDIN_CUDNN_CUDART
// overrides it, to play a cuDNN built for another major than the runtime beside it.
size_t cudnnGetCudartVersion(void) {
  STANDIN_COUNT_CALL();
  if (const char* v = std::getenv("INFER_STANDIN_CUDNN_CUDART"); v && *v) return std::strtoul(v, nullptr, 10);
  return static_cast<size_t>(standin::runtime_version());
}

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  STANDIN_COUNT_CALL();
  if (value == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty", "value is NULL");
  switch (type) {
    case MAJOR_VERSION: *value = CUDNN_MAJOR; return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUDNN_MINOR; return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUDNN_PATCHLEVEL; return CUDNN_STATUS_SUCCESS;
  }
  return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetProperty", "unknown libraryPropertyType");
}

// The sub-libraries are one library here: always consistent.
cudnnStatus_t cudnnOpsVersionCheck(void) {
  STANDIN_COUNT_CALL();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCnnVersionCheck(void) {
  STANDIN_COUNT_CALL();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnAdvVersionCheck(void) {
  STANDIN_COUNT_CALL();
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGraphVersionCheck(void) {
  STANDIN_COUNT_CALL();
  return CUDNN_STATUS_SUCCESS;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  STANDIN_COUNT_CALL();
  switch (status) {
#define STANDIN_NAME(s) \
  case s: return #s;
    STANDIN_NAME(CUDNN_STATUS_SUCCESS)
    STANDIN_NAME(CUDNN_STATUS_NOT_INITIALIZED)
    STANDIN_NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    STANDIN_NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    STANDIN_NAME(CUDNN_STATUS_DEPRECATED)
    STANDIN_NAME(CUDNN_STATUS_LICENSE_ERROR)
    STANDIN_NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    STANDIN_NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    STANDIN_NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    STANDIN_NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    STANDIN_NAME(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
    STANDIN_NAME(CUDNN_STATUS_INTERNAL_ERROR)
    STANDIN_NAME(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
    STANDIN_NAME(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
    STANDIN_NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    STANDIN_NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    STANDIN_NAME(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    STANDIN_NAME(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    STANDIN_NAME(CUDNN_STATUS_EXECUTION_FAILED)
    STANDIN_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
    STANDIN_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
    STANDIN_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
    STANDIN_NAME(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef STANDIN_NAME
    default: break;
  }
  if (static_cast<int>(status) == 2001) return "CUDNN_STATUS_INVALID_VALUE";  // deprecated name
  return "CUDNN_UNKNOWN_STATUS_FOUND";
}

// cuDNN 9 API reference, cudnnGetLastErrorString(): copies the calling thread's latest error
// message (truncated to max_size - 1 characters, NUL-terminated) and clears it.
void cudnnGetLastErrorString(char* message, size_t max_size) {
  STANDIN_COUNT_CALL();
  if (message == nullptr || max_size == 0) return;
  std::string taken;
  taken.swap(standin_cudnn::last_error);
  const std::size_t n = taken.size() < max_size - 1 ? taken.size() : max_size - 1;
  std::memcpy(message, taken.data(), n);
  message[n] = '\0';
}

// cudnnCreate(): CUDNN_STATUS_NOT_INITIALIZED when no usable device (the CUDA runtime found none
// or none is selected); CUDNN_STATUS_BAD_PARAM for a NULL handle pointer.
cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  STANDIN_COUNT_CALL();
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreate", "handle is NULL");
  if (!standin::device_usable()) {
    return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate",
                "no usable CUDA device (the stand-in's CUDA runtime has none selected)");
  }
  *handle = new (std::nothrow) cudnnContext;
  if (*handle == nullptr) {
    return fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnCreate", "out of host memory");
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  STANDIN_COUNT_CALL();
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnDestroy", "handle is NULL");
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

// cudnnSetStream(): later calls on the handle run on `streamId`; the default is the legacy stream.
// An invalid stream is reported by the first call that enqueues on it.
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  STANDIN_COUNT_CALL();
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream", "handle is NULL");
  handle->stream = streamId;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* streamId) {
  STANDIN_COUNT_CALL();
  if (handle == nullptr || streamId == nullptr) {
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream", "handle or streamId is NULL");
  }
  *streamId = static_cast<cudaStream_t>(handle->stream);
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"

// Device selection, the stream and the cuDNN handle (device.h).
#include "backends/cudnn/device.h"

#include <utility>

#include "platform/nvidia_versions.h"

namespace infer::cudnn {
namespace {

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

}  // namespace

// cudaErrorECCUncorrectable is not documented as leaving the context unusable, but an uncorrectable
// memory error leaves the results of any further work suspect.
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
#if CUDART_VERSION >= 13000  // new in CUDA 13: a CUDA 12 runtime never returns them
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
#endif
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
    case cudaErrorECCUncorrectable: return true;
    default: return false;
  }
}

std::string select_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  int driver = 0;
  if (status == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0) {
    // The runtime says "insufficient" also when there is no driver at all; cudaDriverGetVersion
    // reports 0 exactly when no driver (libcuda.so.1) could be loaded.
    throw GpuUnavailableError(
        "no NVIDIA driver is installed (the CUDA driver library libcuda.so.1 could not be "
        "loaded; cudaGetDeviceCount: cudaErrorInsufficientDriver)");
  }
  require_device_call("cudaGetDeviceCount", status);
  if (count < 1) throw GpuUnavailableError("cudaGetDeviceCount found no CUDA device");
  require_device_call("cudaSetDevice(0)", cudaSetDevice(0));
  cudaDeviceProp prop{};
  INFER_CUDA_CHECK("device 0", cudaGetDeviceProperties(&prop, 0));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

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

}  // namespace infer::cudnn

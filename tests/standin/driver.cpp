// The stand-in's libcuda.so.1: the driver API calls the environment probe makes (manifest/probe.cpp),
// for a driver that supports CUDA 13.0 with one device, hidden (like the real driver) when
// CUDA_VISIBLE_DEVICES is empty or starts with -1. Test infrastructure: never installed.
#include <cuda.h>

#include "tests/standin/visible_devices.h"

extern "C" {

__attribute__((visibility("default"))) const char* infer_standin_identity(void) {
  return "infer CPU stand-in for the NVIDIA driver's libcuda.so.1 (test infrastructure, not NVIDIA's library)";
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 13000;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return standin::cuda_devices_hidden() ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int* count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = standin::cuda_devices_hidden() ? 0 : 1;
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult code, const char** name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  switch (code) {
    case CUDA_SUCCESS: *name = "CUDA_SUCCESS"; break;
    case CUDA_ERROR_INVALID_VALUE: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case CUDA_ERROR_NO_DEVICE: *name = "CUDA_ERROR_NO_DEVICE"; break;
    default: *name = "CUDA_ERROR_UNKNOWN"; break;
  }
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult code, const char** text) {
  if (!text) return CUDA_ERROR_INVALID_VALUE;
  switch (code) {
    case CUDA_SUCCESS: *text = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *text = "invalid argument"; break;
    case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; break;
    default: *text = "unknown error"; break;
  }
  return CUDA_SUCCESS;
}

}  // extern "C"

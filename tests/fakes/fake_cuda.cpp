// A fake libcuda.so.1: a driver supporting CUDA 12.2 with one GPU (or one per entry of
// FAKE_NVML_GPUS, as the fake NVML), which (like the real driver) hides every GPU when
// CUDA_VISIBLE_DEVICES is empty or starts with -1, and otherwise counts its entries.
// FAKE_CUDA_INIT makes cuInit return that CUresult (803: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, as a
// libcuda.so.1 of another release than the driver's answers).
#include <cstdlib>

#include "tests/standin/visible_devices.h"

extern "C" {
__attribute__((visibility("default"))) int cuDriverGetVersion(int* v) {
  *v = 12020;
  return 0;
}
__attribute__((visibility("default"))) int cuInit(unsigned) {
  if (const char* rc = std::getenv("FAKE_CUDA_INIT")) return std::atoi(rc);
  return standin::cuda_devices_hidden() ? 100 : 0;  // CUDA_ERROR_NO_DEVICE
}
__attribute__((visibility("default"))) int cuDeviceGetCount(int* n) {
  int gpus = 1;
  if (const char* list = std::getenv("FAKE_NVML_GPUS"); list && *list) {
    for (const char* p = list; *p; ++p) gpus += *p == ',';
  }
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
    int entries = 1;
    for (const char* p = visible; *p; ++p) entries += *p == ',';
    gpus = entries < gpus ? entries : gpus;
  }
  *n = standin::cuda_devices_hidden() ? 0 : gpus;
  return 0;
}
__attribute__((visibility("default"))) int cuGetErrorName(int code, const char** s) {
  *s = code == 100 ? "CUDA_ERROR_NO_DEVICE" : code == 803 ? "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
__attribute__((visibility("default"))) int cuGetErrorString(int code, const char** s) {
  // The texts of the real cuGetErrorString.
  *s = code == 100   ? "no CUDA-capable device is detected"
       : code == 803 ? "system has unsupported display driver / cuda driver combination"
                     : "unknown error";
  return 0;
}
}

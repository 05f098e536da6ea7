// A fake libcuda.so.1: a driver supporting CUDA 12.2 with one GPU, which (like the real driver)
// hides every GPU when CUDA_VISIBLE_DEVICES is empty or starts with -1.
#include "../standin/visible_devices.h"


extern "C" {
__attribute__((visibility("default"))) int cuDriverGetVersion(int* v) {
  *v = 12020;
  return 0;
}
__attribute__((visibility("default"))) int cuInit(unsigned) { return standin::cuda_devices_hidden() ? 100 : 0; }  // CUDA_ERROR_NO_DEVICE
__attribute__((visibility("default"))) int cuDeviceGetCount(int* n) {
  *n = standin::cuda_devices_hidden() ? 0 : 1;
  return 0;
}
__attribute__((visibility("default"))) int cuGetErrorName(int code, const char** s) {
  *s = code == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
__attribute__((visibility("default"))) int cuGetErrorString(int code, const char** s) {
  *s = code == 100 ? "no CUDA-capable device is detected" : "unknown error";
  return 0;
}
}

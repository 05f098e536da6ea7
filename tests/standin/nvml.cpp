// The stand-in's libnvidia-ml.so.1: the NVML calls the environment probe makes (manifest/probe.cpp).
// Its one device is named standin::kDeviceName, so that every report that shows the GPU's name says
// what it is; the driver release and the compute capability are those of emulated_driver.h (by
// default a 580 driver, which supports CUDA 13.0, and 9.0), 16 GiB. Test infrastructure: never
// installed.
#include <cstdio>

#include "tests/standin/device.h"
#include "tests/standin/emulated_driver.h"

namespace {
// No nvml.h ships with the CUDA toolkit here; the types and codes are NVML's documented ones
// (NVML API reference, nvmlReturn_t and nvmlMemory_t).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;

int device_tag = 0;
}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* infer_standin_identity(void) {
  return "infer CPU stand-in for NVML, libnvidia-ml.so.1 (test infrastructure, not NVIDIA's library)";
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2(void) { return NVML_SUCCESS; }
__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown(void) { return NVML_SUCCESS; }

__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  if (std::snprintf(version, length, "%s", standin::driver_release()) >= static_cast<int>(length))
    return NVML_ERROR_INSUFFICIENT_SIZE;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = 1;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                                                  nvmlDevice_t* device) {
  if (!device || index != 0) return NVML_ERROR_INVALID_ARGUMENT;
  *device = reinterpret_cast<nvmlDevice_t>(&device_tag);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                                      unsigned int length) {
  if (device != reinterpret_cast<nvmlDevice_t>(&device_tag) || !name) return NVML_ERROR_INVALID_ARGUMENT;
  if (std::snprintf(name, length, "%s", standin::kDeviceName) >= static_cast<int>(length)) {
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                                                       int* minor) {
  if (device != reinterpret_cast<nvmlDevice_t>(&device_tag) || !major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
  *major = standin::device_cc() / 10;
  *minor = standin::device_cc() % 10;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (device != reinterpret_cast<nvmlDevice_t>(&device_tag) || !memory) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = 16ULL << 30;
  memory->free = memory->total;
  memory->used = 0;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t result) {
  return result == NVML_SUCCESS ? "Success" : "Invalid Argument";
}

}  // extern "C"

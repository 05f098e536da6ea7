/* A fake of the NVIDIA driver's nvcuda.dll for the Windows scenario tests (never NVIDIA's):
   INFER_FAKE_DRIVER_CUDA (default 13000) is what cuDriverGetVersion says; INFER_FAKE_GPUS
   (default 1) GPUs named "NVIDIA H200 (infer test fake)", compute capability 9.0, 143771 MiB;
   none makes cuInit return CUDA_ERROR_NO_DEVICE (100). Driver API functions are CUresult
   CUDAAPI f(...); CUDAAPI is __stdcall, which x64 ignores. */
#include <stdio.h>
#include <string.h>

#include "tests/windows/fakes/fake_env.h"

__declspec(dllexport) int cuDriverGetVersion(int* v) {
  fake_crash_if_asked("nvcuda.dll");
  *v = fake_env_int("INFER_FAKE_DRIVER_CUDA", 13000);
  return 0;
}
__declspec(dllexport) int cuInit(unsigned flags) {
  (void)flags;
  return fake_env_int("INFER_FAKE_GPUS", 1) > 0 ? 0 : 100;
}
__declspec(dllexport) int cuDeviceGetCount(int* n) {
  *n = fake_env_int("INFER_FAKE_GPUS", 1);
  return 0;
}
__declspec(dllexport) int cuDeviceGet(int* device, int ordinal) {
  *device = ordinal;
  return 0;
}
__declspec(dllexport) int cuDeviceGetName(char* name, int len, int device) {
  (void)device;
  snprintf(name, (size_t)len, "%s", "NVIDIA H200 (infer test fake)");
  return 0;
}
__declspec(dllexport) int cuDeviceGetAttribute(int* value, int attribute, int device) {
  (void)device;
  *value = attribute == 75 ? 9 : attribute == 76 ? 0 : 0; /* compute capability 9.0 */
  return 0;
}
__declspec(dllexport) int cuDeviceTotalMem_v2(size_t* bytes, int device) {
  (void)device;
  *bytes = (size_t)143771 << 20;
  return 0;
}

// A fake libnvidia-ml.so.1: driver 535.104.05, one 16 GiB GPU of compute capability FAKE_NVML_CC
// (environment, "major.minor"; default 8.0).
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
struct Memory {
  unsigned long long total, free, used;
};
int device_tag = 0;
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int nvmlInit_v2() { return 0; }
__attribute__((visibility("default"))) int nvmlShutdown() { return 0; }
__attribute__((visibility("default"))) int nvmlSystemGetDriverVersion(char* out, unsigned n) {
  std::snprintf(out, n, "%s", "535.104.05");
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 1;
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned, void** dev) {
  *dev = &device_tag;
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void*, char* out, unsigned n) {
  std::snprintf(out, n, "%s", "NVIDIA Fake GPU");
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCudaComputeCapability(void*, int* major, int* minor) {
  const char* cc = std::getenv("FAKE_NVML_CC");
  *major = 8;
  *minor = 0;
  if (cc && std::sscanf(cc, "%d.%d", major, minor) != 2) return 1;
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
  m->total = 16ULL << 30;
  m->free = m->total;
  m->used = 0;
  return 0;
}
}

// A fake libnvidia-ml.so.1: driver 535.104.05, one 16 GiB GPU of compute capability FAKE_NVML_CC
// (environment, "major.minor"; default 8.0), or one GPU per entry of FAKE_NVML_GPUS ("6.0,9.0"),
// named "NVIDIA Fake GPU <index>". FAKE_NVML_INIT makes nvmlInit_v2 return that nvmlReturn_t;
// FAKE_NVML_RELEASE replaces the driver release it reports.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
struct Memory {
  unsigned long long total, free, used;
};
int device_tags[8] = {};

// The compute capabilities of the GPUs: FAKE_NVML_GPUS, else the one of FAKE_NVML_CC.
int gpu_count() {
  const char* list = std::getenv("FAKE_NVML_GPUS");
  if (!list || !*list) return 1;
  int n = 1;
  for (const char* p = list; *p; ++p) n += *p == ',';
  return n < 8 ? n : 8;
}

int index_of(void* dev) { return static_cast<int>(static_cast<int*>(dev) - device_tags); }

bool cc_of(int index, int* major, int* minor) {
  const char* list = std::getenv("FAKE_NVML_GPUS");
  if (list && *list) {
    const char* p = list;
    for (int i = 0; i < index && p; ++i) p = std::strchr(p, ','), p = p ? p + 1 : nullptr;
    return p && std::sscanf(p, "%d.%d", major, minor) == 2;
  }
  const char* cc = std::getenv("FAKE_NVML_CC");
  *major = 8;
  *minor = 0;
  return !cc || std::sscanf(cc, "%d.%d", major, minor) == 2;
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int nvmlInit_v2() {
  const char* rc = std::getenv("FAKE_NVML_INIT");
  return rc ? std::atoi(rc) : 0;
}
__attribute__((visibility("default"))) int nvmlShutdown() { return 0; }
__attribute__((visibility("default"))) int nvmlSystemGetDriverVersion(char* out, unsigned n) {
  const char* release = std::getenv("FAKE_NVML_RELEASE");
  std::snprintf(out, n, "%s", release && *release ? release : "535.104.05");
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = static_cast<unsigned>(gpu_count());
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  if (static_cast<int>(i) >= gpu_count()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *dev = &device_tags[i];
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(void* dev, char* out, unsigned n) {
  if (std::getenv("FAKE_NVML_GPUS"))
    std::snprintf(out, n, "NVIDIA Fake GPU %d", index_of(dev));
  else
    std::snprintf(out, n, "%s", "NVIDIA Fake GPU");
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUUID(void* dev, char* out, unsigned n) {
  std::snprintf(out, n, "GPU-00000000-0000-0000-0000-0000000000%02d", index_of(dev));
  return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCudaComputeCapability(void* dev, int* major, int* minor) {
  return cc_of(index_of(dev), major, minor) ? 0 : 1;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
  m->total = 16ULL << 30;
  m->free = m->total;
  m->used = 0;
  return 0;
}
}

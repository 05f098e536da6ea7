// The stand-in cuDNN's side of device.h: each function forwards to the stand-in libcudart of the
// process (libcudart.so.12 or .so.13, whichever a module loaded), found on first use. Like NVIDIA's
// cuDNN, this library names no CUDA runtime, so it loads alone (the environment probe loads it so).
// These definitions are local to libcudnn.so.9 (cudnn/exports.map): the libcudart's own stay its.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/standin/device.h"

namespace standin {
namespace {

const DeviceApi* find_api() {
  for (const char* soname : {"libcudart.so.13", "libcudart.so.12"}) {
    if (void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
      using Entry = const DeviceApi* (*)();
      auto entry = reinterpret_cast<Entry>(dlsym(h, "infer_standin_device_api"));
      dlclose(h);  // drops the reference RTLD_NOLOAD took; the library stays loaded
      if (entry) return entry();
    }
  }
  return nullptr;
}

// The runtime's table; a call that needs the device without a stand-in runtime loaded is a misuse.
const DeviceApi& api(const char* call) {
  static const DeviceApi* const found = find_api();
  if (!found) {
    std::fprintf(stderr, "infer CPU stand-in: %s: no stand-in libcudart (libcudart.so.13 or .so.12) is loaded\n", call);
    std::abort();
  }
  return *found;
}

}  // namespace

void require_device(const char* call, const Range& r) { api(call).require_device(call, r); }
void require_host(const char* call, const void* p, const char* arg) { api(call).require_host(call, p, arg); }
void fail(const char* call, const std::string& problem) {
  api(call).fail(call, problem);
  std::abort();  // not reached: the runtime's fail ends the process
}
int enqueue(void* stream, const char* call, std::vector<Range> ranges, std::function<void()> work) {
  return api(call).enqueue(stream, call, std::move(ranges), std::move(work));
}
bool capturing(void* stream) { return api("capturing").capturing(stream); }
int synchronize(void* stream) { return api("synchronize").synchronize(stream); }
bool device_usable() { return api("device_usable").device_usable(); }

// Without a stand-in runtime in the process (cuDNN loaded alone, as the environment probe does),
// the CUDA runtime this cuDNN "was built for" is the default backend's, CUDA 13.
int runtime_version() {
  const DeviceApi* loaded = find_api();
  return loaded ? loaded->runtime_version() : 13000;
}

}  // namespace standin

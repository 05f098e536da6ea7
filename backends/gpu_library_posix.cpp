// Loading the GPU backends on Linux: dlopen, after trial loads in forked children (one per module, at once).
#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>

#include "infer/errors.h"
#include "backends/gpu_backend.h"
#include "platform/isolated.h"

namespace infer {

const char* const kGpuBuildHint =
    "this build has no GPU backend (configure with CUDA and cuDNN installed, or tools/dev/fetch-cuda12.sh for "
    "CUDA 12) or it was not installed";

const char* gpu_library_name(int cuda_major) {
  switch (cuda_major) {
    case 13: return "libinfer_cudnn_cu13.so";
    case 12: return "libinfer_cudnn_cu12.so";
    default: return nullptr;
  }
}

GpuLibrary::~GpuLibrary() { dlclose(handle_); }

namespace {

struct LoadedSearch {
  std::vector<void*> handles;
};

int collect_cudnn(dl_phdr_info* info, std::size_t, void* data) {
  const std::string name = info->dlpi_name ? info->dlpi_name : "";
  const std::size_t slash = name.rfind('/');
  if (name.compare(slash == std::string::npos ? 0 : slash + 1, 11, "libcudnn.so") == 0) {
    if (void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD)) static_cast<LoadedSearch*>(data)->handles.push_back(h);
  }
  return 0;
}

// The child's side of a trial load: loads the backend, the CUDA runtime and cuDNN it links, has cuDNN
// load its sub-libraries, and reports the versions and the device (report_plugin). A damaged
// library file (truncated, corrupt, a stub) then ends the child, not infer.
void trial_load_child(const ChildChannel& ch, const std::filesystem::path& path) {
  ch.step("dlopen " + path.string() + " (the GPU backend, with the CUDA runtime and cuDNN)");
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    ch.put("load_error", "cannot load the GPU backend: " + std::string(why ? why : path.string()));
    return;
  }
  auto entry = reinterpret_cast<InferGpuPluginEntry>(dlsym(handle, "infer_gpu_plugin"));
  const InferGpuPlugin* api = entry ? entry() : nullptr;
  if (!api || api->abi_version != INFER_GPU_PLUGIN_ABI) return;
  LoadedSearch cudnn;
  dl_iterate_phdr(collect_cudnn, &cudnn);
  for (void* h : cudnn.handles) {
    for (const char* check :
         {"cudnnGraphVersionCheck", "cudnnOpsVersionCheck", "cudnnCnnVersionCheck", "cudnnAdvVersionCheck"}) {
      using Check = int (*)();
      if (auto f = reinterpret_cast<Check>(dlsym(h, check))) {
        ch.step(std::string(check) + "() (cuDNN loads that sub-library)");
        f();
      }
    }
  }
  report_plugin(ch, *api);
}

}  // namespace

void GpuLibrary::probe(std::vector<GpuBackendProbe>& probes) {
  std::vector<ChildBody> bodies;
  std::vector<GpuBackendProbe*> probed;
  for (GpuBackendProbe& p : probes) {
    if (p.module.empty()) continue;
    bodies.push_back([path = p.module](const ChildChannel& ch) { trial_load_child(ch, path); });
    probed.push_back(&p);
  }
  const std::vector<IsolatedResult> results = run_isolated(bodies, probe_timeout());
  for (std::size_t i = 0; i < results.size(); ++i) read_probe(results[i], *probed[i]);
}

std::shared_ptr<GpuLibrary> GpuLibrary::open(const std::filesystem::path& path) {
  const IsolatedResult r =
      run_isolated([&path](const ChildChannel& ch) { trial_load_child(ch, path); }, probe_timeout());
  if (!r.finished()) {
    throw GpuUnavailableError("loading the GPU backend " + r.failure() + "; infer --check names the cause");
  }
  return load(path);  // reports a library that does not load, or is not ours, itself
}

std::shared_ptr<GpuLibrary> GpuLibrary::load(const std::filesystem::path& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw GpuUnavailableError("cannot load the GPU backend: " + std::string(why ? why : path.string()));
  }
  try {
    const InferGpuPlugin& api =
        checked_plugin(reinterpret_cast<InferGpuPluginEntry>(dlsym(handle, "infer_gpu_plugin")), path);
    return std::shared_ptr<GpuLibrary>(new GpuLibrary(handle, &api, path));
  } catch (...) {
    dlclose(handle);
    throw;
  }
}

}  // namespace infer

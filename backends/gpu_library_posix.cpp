// Loading the GPU backend on Linux: dlopen, after a trial load in a forked child.
#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>

#include "infer/errors.h"
#include "backends/gpu_backend.h"
#include "platform/isolated.h"

namespace infer {

const char* const kGpuLibraryName = "libinfer_cudnn.so";
const char* const kGpuBuildHint =
    "this build has no GPU backend (configure with CUDA and cuDNN installed) or it was not installed";

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

// Loads the backend, the CUDA runtime and cuDNN it links, asks their versions and has cuDNN load
// its sub-libraries, all in a child process: a damaged library file (truncated, corrupt, a stub)
// then ends the child, not infer, and the run goes on without the GPU.
void trial_load(const std::filesystem::path& path) {
  const IsolatedResult r = run_isolated(
      [&path](const ChildChannel& ch) {
        ch.step("dlopen " + path.string() + " (the GPU backend, with the CUDA runtime and cuDNN)");
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) return;  // the real dlopen below reports it
        auto entry = reinterpret_cast<InferGpuPluginEntry>(dlsym(handle, "infer_gpu_plugin"));
        const InferGpuPlugin* api = entry ? entry() : nullptr;
        if (!api || api->abi_version != INFER_GPU_PLUGIN_ABI) return;
        ch.step("asking the CUDA runtime and cuDNN their versions");
        InferGpuVersions v{};
        api->versions(&v);
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
      },
      probe_timeout());
  if (!r.finished()) {
    throw GpuUnavailableError("loading the GPU backend " + r.failure() + "; infer --check names the cause");
  }
}

}  // namespace

std::shared_ptr<GpuLibrary> GpuLibrary::open(const std::filesystem::path& path) {
  trial_load(path);
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

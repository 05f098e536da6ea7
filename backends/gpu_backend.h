// Loads the cuDNN backend library at run time and wraps it as a Backend.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/gpu_plugin.h"
#include "platform/isolated.h"

namespace infer {

// The backend's file name (libinfer_cudnn.so, infer_cudnn.dll) and what to say when none is found.
extern const char* const kGpuLibraryName;
extern const char* const kGpuBuildHint;

// Where load_gpu_backend looks for the backend (kGpuLibraryName), in order: $INFER_GPU_LIBRARY if set (and
// nowhere else), or else the folders of install_layout.h's gpu_module_folders().
std::vector<std::filesystem::path> gpu_library_candidates();

// The library, opened and checked (ABI version), but no GPU touched yet: first loaded in a child
// process (a damaged library ends the child, not the program), then here. Throws
// GpuUnavailableError with the loader's own message (a missing libcudnn.so.9, say).
// gpu_library_posix.cpp (dlopen) and gpu_library_windows.cpp (LoadLibraryExW) implement it.
class GpuLibrary {
 public:
  static std::shared_ptr<GpuLibrary> open();
  static std::shared_ptr<GpuLibrary> open(const std::filesystem::path& path);
  ~GpuLibrary();
  GpuLibrary(const GpuLibrary&) = delete;
  GpuLibrary& operator=(const GpuLibrary&) = delete;

  const InferGpuPlugin& api() const { return *api_; }
  const std::filesystem::path& path() const { return path_; }
  InferGpuVersions versions() const;

 private:
  GpuLibrary(void* handle, const InferGpuPlugin* api, std::filesystem::path path);
  void* handle_;
  const InferGpuPlugin* api_;
  std::filesystem::path path_;
};

#ifdef _WIN32
// The trial load's child job ("gpu-backend"), for run_child_if_asked() in wmain(); nullptr for
// another name.
ChildJob find_gpu_job(const std::string& name);
#endif

// The plugin table behind `entry` (nullptr: the library has no infer_gpu_plugin) if it is one of
// this build's: the same ABI version, Network layout, op list and C++ standard library. Else
// GpuUnavailableError naming `path` and what differs. Both loaders (gpu_library_*.cpp) call it.
const InferGpuPlugin& checked_plugin(InferGpuPluginEntry entry, const std::filesystem::path& path);

// Whether the GPU backend's top_k() selects on the device for a last layer of `classes` outputs
// and n samples: within gpu_plugin.h's INFER_GPU_TOP_K_MAX_CLASSES and INFER_GPU_TOP_K_MAX_SAMPLES.
// Beyond them it runs Backend::top_k (forward() and selection on the host) instead. Only the upper
// limits are checked here; a bad k or n is rejected by either path (std::invalid_argument).
bool gpu_top_k_on_device(std::size_t classes, int n);

// Builds the GPU backend for the network (which must outlive it). Throws GpuUnavailableError
// when the library or the GPU cannot be used, GpuError when setting up on a usable GPU fails.
// options.log is called on the calling thread, during construction and forward()/top_k() only.
std::unique_ptr<Backend> make_gpu_backend(const Network& network, int max_batch, const GpuOptions& options = {});
std::unique_ptr<Backend> make_gpu_backend(std::shared_ptr<GpuLibrary> library, const Network& network, int max_batch,
                                          const GpuOptions& options = {});

}  // namespace infer

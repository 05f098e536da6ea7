// Loads the cuDNN backend library at run time and wraps it as a Backend.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/gpu_choice.h"
#include "backends/gpu_plugin.h"
#include "platform/isolated.h"

namespace infer {

// What to say when no backend is found.
extern const char* const kGpuBuildHint;

// The file name of the backend for a CUDA major (libinfer_cudnn_cu13.so, libinfer_cudnn_cu12.so;
// on Windows infer_cudnn.dll, CUDA 13 only), or nullptr when this system has none for it.
const char* gpu_library_name(int cuda_major);

// Where GpuLibrary::open looks for the backend of a CUDA major, in order: the folders of
// install_layout.h's gpu_module_folders(). ($INFER_GPU_LIBRARY, when set, names the one module to
// load instead, and no choice is made.)
std::vector<std::filesystem::path> gpu_library_candidates(int cuda_major);

// The trial load's report (gpu_library_*.cpp's children): the child sends what the plugin says
// with report_plugin, and the parent reads it into a probe with read_probe.
void report_plugin(const ChildChannel& ch, const InferGpuPlugin& api);
void read_probe(const IsolatedResult& r, GpuBackendProbe& probe);

// The library, opened and checked (ABI version), but no GPU touched yet: first loaded in a child
// process (a damaged library ends the child, not the program), then here. Throws
// GpuUnavailableError with the loader's own message (a missing libcudnn.so.9, say).
// gpu_library_posix.cpp (dlopen) and gpu_library_windows.cpp (LoadLibraryExW) implement it.
class GpuLibrary {
 public:
  // The backend this machine runs (gpu_choice.h): each installed module is trial-loaded, in child
  // processes at once, and the newest that runs is loaded. forced_major 12 or 13 takes that one or
  // none; 0 takes INFER_CUDA from the environment, else chooses. Throws GpuUnavailableError with
  // GpuChoice::summary() when none runs.
  // why: how forced_major was decided, for the reports ("asked for" when empty).
  static std::shared_ptr<GpuLibrary> open(int forced_major = 0, const std::string& why = "");
  // This module, trial-loaded first; no choice (choice() then names this module's major only).
  static std::shared_ptr<GpuLibrary> open(const std::filesystem::path& path);
  ~GpuLibrary();
  GpuLibrary(const GpuLibrary&) = delete;
  GpuLibrary& operator=(const GpuLibrary&) = delete;

  const InferGpuPlugin& api() const { return *api_; }
  const std::filesystem::path& path() const { return path_; }
  InferGpuVersions versions() const;
  // How this module was chosen: every backend's verdict.
  const GpuChoice& choice() const { return choice_; }

 private:
  GpuLibrary(void* handle, const InferGpuPlugin* api, std::filesystem::path path);
  // Loads and checks the module (gpu_library_*.cpp), without a trial load: the caller made one.
  static std::shared_ptr<GpuLibrary> load(const std::filesystem::path& path);
  // Trial-loads each probe's module (the ones whose module is set) in child processes, at once,
  // and fills in what each found (gpu_library_*.cpp).
  static void probe(std::vector<GpuBackendProbe>& probes);

  void* handle_;
  const InferGpuPlugin* api_;
  std::filesystem::path path_;
  GpuChoice choice_;
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

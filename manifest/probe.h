// What this machine has, read from the system itself: dlopen/dlsym of the real NVIDIA libraries
// (libcuda.so.1, libnvidia-ml.so.1, libcudart.so.N, libcudnn.so.N and its sub-libraries),
// /proc/driver/nvidia/version, uname, glibc. Never nvidia-smi. Nothing here throws or aborts
// because a library is missing or broken: every value is optional and carries its source or
// the reason it is unknown.
//
// Thread-safety: probe_machine() may be called from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace infer::manifest {

// What the GPU backend was compiled with (filled in by app/ from its build definitions).
struct BuildInfo {
  std::string cuda;      // CUDA toolkit, e.g. "13.0.88"; empty when built without the GPU backend
  std::string cudnn;     // cuDNN headers, e.g. "9.19.0"; empty likewise
  std::string compiler;  // e.g. "GNU 12.2.0"
};

// One shared library as the dynamic loader resolved it.
struct LibraryProbe {
  std::string soname;                    // what was asked for: "libcudnn.so.9"
  bool loaded = false;
  std::string path;                      // where the loader found it (dladdr/dl_iterate_phdr)
  std::string error;                     // dlerror() when not loaded
  std::vector<std::string> other_copies; // other files with this name on the search path (could shadow it)
  // What the library says it is when it is the project's CPU stand-in (tests/standin/, test
  // infrastructure): its infer_standin_identity(). Empty for NVIDIA's libraries.
  std::string standin;
};

struct GpuProbe {
  std::string name;
  std::optional<std::string> compute_capability;  // "9.0"
  std::optional<std::uint64_t> memory_mib;
};

struct CudnnSublibrary {
  std::string soname;
  bool in_cudnn_dir = false;     // a file of this name is next to the loaded libcudnn
  std::string loaded_path;       // where the loader took it from (empty: not loaded by the checks)
  std::optional<int> check;      // status of the libcudnn <X>VersionCheck() for it; 0 = same build
  std::string check_function;
};

struct MachineProbe {
  // System.
  std::string os, arch, glibc;
  // Driver.
  LibraryProbe libcuda, libnvml;
  std::optional<int> driver_cuda;           // cuDriverGetVersion, e.g. 12020
  std::optional<std::string> driver_release;  // "580.65.06"
  std::string driver_release_source;
  std::optional<int> cuda_device_count;     // cuDeviceGetCount after cuInit (honours CUDA_VISIBLE_DEVICES)
  std::string cuda_init_error;              // cuInit's error name and string, when it failed
  std::optional<std::string> cuda_visible_devices;  // the variable, when set
  std::vector<GpuProbe> gpus;               // from NVML (every GPU, whatever CUDA_VISIBLE_DEVICES says)
  bool gpus_known = false;
  // CUDA runtime.
  LibraryProbe cudart;
  std::optional<std::string> cudart_version;  // "13.0" (cudaRuntimeGetVersion) or the soname's major
  std::string cudart_version_source;
  // cuDNN.
  LibraryProbe cudnn;
  std::optional<long> cudnn_version;          // cudnnGetVersion
  std::optional<long> cudnn_cudart_version;   // cudnnGetCudartVersion: the CUDA runtime cuDNN was built for
  std::vector<CudnnSublibrary> cudnn_sublibraries;
  BuildInfo build;
};

// Probes this machine (about 50 ms with cuDNN present). The result is cached within the process
// after the first call with the same BuildInfo.
const MachineProbe& probe_machine(const BuildInfo& build);

// The directories a library with this soname may come from, besides the one loaded: LD_LIBRARY_PATH,
// the loader cache (ldconfig -p), $CONDA_PREFIX/lib, pip nvidia/*/lib folders. Returns the paths of
// files named `soname` found there, canonical, without duplicates.
std::vector<std::string> visible_copies(const std::string& soname);

}  // namespace infer::manifest

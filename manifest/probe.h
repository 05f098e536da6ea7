// What this machine has, read from the system itself: dlopen/dlsym of the real NVIDIA libraries
// (libcuda.so.1, libnvidia-ml.so.1, libcudart.so.N, libcudnn.so.N and its sub-libraries) in child
// processes, /proc/driver/nvidia/version, uname, glibc (probe.cpp, Linux); LoadLibraryExW of
// nvcuda.dll, nvml.dll, cudart64_N.dll, cudnn64_N.dll and its sub-DLLs in child processes, their
// VERSIONINFO and import tables, CUDA_PATH (probe_windows.cpp, Windows). Never nvidia-smi. Nothing here throws,
// aborts, crashes or hangs because a library is missing or broken: every value is optional and
// carries its source or the reason it is unknown.
//
// Thread-safety: probe_machine() may be called from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platform/isolated.h"
#include "manifest/platform_words.h"

namespace infer::manifest {

// What the GPU backend was compiled with (filled in by app/ from its build definitions).
struct BuildInfo {
  std::string cuda;      // CUDA toolkit, e.g. "13.0.88"; empty when built without the GPU backend
  std::string cudnn;     // cuDNN headers, e.g. "9.19.0"; empty likewise
  std::string compiler;  // e.g. "GNU 12.2.0"
  // The CUDA major of the backend this describes (its libcudart.so.N); 0: the major of `cuda`, else 13.
  int cuda_major = 0;
  // The cuDNN major to probe when `cudnn` is empty (a build without the GPU backend): the
  // manifest's (wanted_cudnn_major()); 0 means 9.
  int cudnn_major = 0;
};

// A file with a library's name that the loader does not take, or another major of it.
struct LibraryCopy {
  std::string soname;           // its file name: "libcudnn.so.9", or "libcudnn.so.8" for another major
  std::string path;             // canonical
  std::string origin;           // the folder's role: "LD_LIBRARY_PATH entry 2", "ldconfig cache", "virtualenv /x", ...
  bool on_loader_path = false;  // in a folder dlopen(soname) searches (LD_LIBRARY_PATH, ldconfig cache)
  std::string version;          // what the library says it is, read in a child process; "" when unknown
  std::string problem;          // why it is unusable (not a library, crashed, ...); "" when fine
};

// One shared library as the dynamic loader resolved it. Loaded and called in a child process
// (platform/isolated.h): whatever the file holds, the checking process survives.
struct LibraryProbe {
  std::string soname;  // what was asked for: "libcudnn.so.9"
  bool loaded = false;
  std::string path;   // where the loader found it (the link map's name)
  std::string error;  // dlerror() when not loaded
  // The file is there but unusable: "not a library: /x/libcudnn.so.9 (empty file)", "crashed with
  // SIGBUS (Bus error) in /x/libcudnn.so.9 while dlopen libcudnn.so.9", a nonsense version. One line.
  std::string broken;
  std::string broken_file;          // the file `broken` is about
  std::vector<LibraryCopy> copies;  // other files with this name (on the loader path or in Python envs)
  std::vector<std::string> output;  // lines the library printed on stdout/stderr while probed
  // What the library says it is when it is the project's CPU stand-in (tests/standin/, test
  // infrastructure): its infer_standin_identity(). Empty for NVIDIA's libraries.
  std::string standin;
  // The copies on the loader's path (LD_LIBRARY_PATH, ldconfig cache) other than the loaded one.
  std::vector<std::string> other_copies() const;
};

struct GpuProbe {
  std::string name;
  std::string uuid;                               // "GPU-8b0c..." (NVML's form)
  std::optional<std::string> compute_capability;  // "9.0"
  std::optional<std::uint64_t> memory_mib;
  std::string source;  // "CUDA device 0" or "NVML device 1"
};

struct CudnnSublibrary {
  std::string soname;
  bool in_cudnn_dir = false;  // a file of this name is next to the loaded libcudnn
  std::string loaded_path;    // where the loader took it from (empty: not loaded)
  std::string
      origin;  // the search folder's role for loaded_path ("LD_LIBRARY_PATH entry 1"), when not the cuDNN folder
  std::optional<int> check;  // status of the libcudnn <X>VersionCheck() for it; 0 = same build
  std::string check_function;
  std::optional<long> version;            // its own version (cudnn_<x>_version data symbol), as cudnnGetVersion counts
  std::string problem;                    // not a library, crashed, could not be loaded: one line
  std::vector<std::string> other_copies;  // other files of this name on the loader's path, canonical
};

struct MachineProbe {
  // System.
  Platform platform = kThisPlatform;  // whose loader the library fields describe
  std::string os, arch, glibc;        // glibc: Linux only
  std::vector<std::string> path_entries;  // Windows: PATH's entries in order (the loader searches them last)
  // Driver.
  LibraryProbe libcuda, libnvml;
  std::optional<int> driver_cuda;             // cuDriverGetVersion, e.g. 12020
  std::optional<std::string> driver_release;  // "580.65.06"
  std::string driver_release_source;
  std::optional<std::string> kernel_module_release;  // /proc/driver/nvidia/version, when readable
  std::optional<std::string> user_space_release;     // from libcuda/libnvidia-ml's file names (libcuda.so.580.65.06)
  std::optional<int> cuda_init;                      // cuInit's CUresult, when it ran
  std::optional<int> nvml_init;                      // nvmlInit_v2's nvmlReturn_t, when it ran
  std::optional<int> cuda_device_count;              // cuDeviceGetCount after cuInit (honours CUDA_VISIBLE_DEVICES)
  std::string cuda_init_error;  // "cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"
  std::optional<std::string> cuda_visible_devices;  // the variable, when set
  std::vector<GpuProbe> gpus;                       // the GPUs CUDA uses (CUDA_VISIBLE_DEVICES applied)
  std::vector<GpuProbe> hidden_gpus;                // GPUs NVML sees that CUDA_VISIBLE_DEVICES hides
  bool gpus_known = false;
  // CUDA runtime.
  LibraryProbe cudart;
  std::optional<std::string> cudart_version;  // "13.0" (cudaRuntimeGetVersion) or the soname's major
  std::string cudart_version_source;
  std::vector<LibraryCopy> cudart_other_majors;  // libcudart.so.12 ... found by the loader, with versions
  // cuDNN.
  LibraryProbe cudnn;
  std::optional<long> cudnn_version;         // cudnnGetVersion
  std::optional<long> cudnn_cudart_version;  // cudnnGetCudartVersion: the CUDA runtime cuDNN was built for
  std::string cudnn_version_from;  // the sub-library that answered cudnnGetVersion (cuDNN 9: libcudnn_graph.so.9)
  std::vector<CudnnSublibrary> cudnn_sublibraries;
  std::vector<LibraryCopy> cudnn_other_majors;  // libcudnn.so.8 ... found by the loader, with versions
  BuildInfo build;

  // "<path>: <its infer_standin_identity()>" of each library above that is the project's CPU
  // stand-in (LibraryProbe::standin), in the order libcuda, libnvml, cudart, cudnn.
  std::vector<std::string> standins() const;
};

// Probes this machine. Every library is loaded and called in child processes, all at once, with a
// deadline (platform/isolated.h): about 50-100 ms with cuDNN present. The result is cached within the
// process after the first call with the same BuildInfo.
const MachineProbe& probe_machine(const BuildInfo& build);

#ifdef _WIN32
// Windows: the probe's children are this program started again (platform/isolated.h). A program
// that probes passes this finder of the probe's jobs to run_child_if_asked() first in wmain(); in
// a child that runs the probe job and ends the process.
ChildJob find_probe_job(const std::string& name);
#endif

}  // namespace infer::manifest

// Which GPU backend a machine runs. There is one module per CUDA major (backends/cudnn/:
// libinfer_cudnn_cu13.so, libinfer_cudnn_cu12.so), because the CUDA major a program can use is set
// by the NVIDIA driver, not by what was built. The loader (gpu_library_*.cpp) trial-loads each
// installed module in a child process and records what it found (GpuBackendProbe); this file turns
// that into a choice: the newest backend that the driver and the GPU support and whose CUDA runtime
// and cuDNN load, with, for every backend, the first thing that stops it. Pure logic, so that every
// machine is a unit test (tests/backends/test_gpu_choice.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace infer {

// What a backend of CUDA major `cuda_major` needs of the machine. The numbers are facts from
// NVIDIA's documentation, kept with their sources in manifest/facts.toml; a test checks that these
// agree with that file (tests/manifest/test_manifest.cpp,
// Facts.GpuBackendRequirementsAreTheFactsOfTheirMajorAndCudnn).
struct GpuBackendRequirements {
  int cuda_major;
  const char* min_driver;  // Linux driver floor for every runtime of this major ([[cuda_driver]])
  int min_cc;              // lowest compute capability, 10 * major + minor ([[cuda_compute_capability]])
};
// Newest first: the order of preference.
inline constexpr GpuBackendRequirements kGpuBackends[] = {{13, "580.65.06", 75}, {12, "525.60.13", 50}};

// "cu13": the backend's short name (the JSON lines' backend field, --cuda's values with "cu").
std::string gpu_backend_name(int cuda_major);

// What the trial load of one module found. Every number is 0 when unknown.
struct GpuBackendProbe {
  int cuda_major = 0;
  std::filesystem::path module;  // empty: this backend is not installed
  std::string load_failure;      // why the module, its CUDA runtime or its cuDNN did not load; empty: they did
  int driver_cuda = 0;           // cudaDriverGetVersion (1000 * major + 10 * minor); 0: no NVIDIA driver
  int runtime = 0;               // cudaRuntimeGetVersion of the runtime that loaded
  int cudnn = 0;                 // cudnnGetVersion of the cuDNN that loaded
  int cudnn_cudart = 0;          // cudnnGetCudartVersion: the CUDA runtime that cuDNN was built for
  int device_count = 0;          // cudaGetDeviceCount
  int device_cc = 0;             // device 0's compute capability, 10 * major + minor
  std::string device_error;      // cudaGetDeviceCount's error name when it failed
};

// One backend's verdict.
struct GpuBackendVerdict {
  int cuda_major = 0;
  bool runs = false;
  std::string reason;  // runs: what it was built with and found; else the first thing that stops it
};

struct GpuChoice {
  int chosen = 0;                           // the CUDA major that runs; 0: none
  int forced = 0;                           // the major asked for (--cuda, INFER_CUDA, the manifest); 0: automatic
  std::string forced_by;                    // how: "asked for", "the one VERSIONS.toml finds running here"
  std::vector<GpuBackendVerdict> backends;  // one per known backend, newest first
  int driver_cuda = 0;                      // what the machine has, as the probes saw it
  int device_cc = 0;

  const GpuBackendVerdict* verdict(int cuda_major) const;
  // One line: "CUDA 12 backend (the driver supports CUDA 12.4; CUDA 13 needs driver 580.65.06 or newer)"
  // or, with none chosen, every backend's reason.
  std::string summary() const;
};

// Chooses among `probes` (any order; a backend without a probe is "not installed"). forced_major
// 0 chooses automatically; 12 or 13 takes that backend or none (then summary() says why), and the
// others are "not tried" (forced_by says how that one was decided).
GpuChoice choose_gpu_backend(const std::vector<GpuBackendProbe>& probes, int forced_major,
                             const std::string& forced_by = "asked for");

// The backend the user asks for: --cuda's value, else the environment variable INFER_CUDA ("12",
// "13", "cu12", "cu13" or "auto"); 0 for automatic. parse_cuda_major throws std::invalid_argument
// naming the value when it is none of those; cuda_major_from_environment, GpuUnavailableError (the
// GPU cannot be used as asked).
int parse_cuda_major(const std::string& value, const std::string& where);
int cuda_major_from_environment();

}  // namespace infer

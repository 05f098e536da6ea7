// The environment check of `infer --check`, for programs: this machine's NVIDIA driver, GPUs, CUDA
// runtime and cuDNN (probed through the libraries the loader would load), compared with a
// VERSIONS.toml manifest; and a manifest written for this machine.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "infer/export.h"

namespace infer {

// One row of the report.
struct EnvironmentItem {
  std::string item;      // "cudnn.version", "driver.release", "model:weights/fashion.toml"
  std::string expected;  // the manifest's constraint, as written
  std::string found;     // the value found, or why there is none
  std::string source;    // where it came from: the library file and call, the file
  std::string status;    // "ok", "warn", "FAIL" or "unknown"
  bool required = true;  // false: advisory, never makes the report fail
  std::string fix;       // one line; empty when ok
  std::string because;   // the item whose failure this one follows from; empty for a root cause
  std::vector<std::string> notes;
};

struct EnvironmentReport {
  std::filesystem::path manifest;
  bool ok = false;  // every required item is ok (unknown is not)
  std::vector<EnvironmentItem> items;
  // "<path>: <what it is>" of each probed library that is infer's CPU stand-in for NVIDIA's
  // (test infrastructure): with one loaded, nothing in the report describes a GPU.
  std::vector<std::string> standins;
  std::string first_failure;  // the root cause in one line ("cuda.runtime: not found ..."); empty when ok
  std::string table;          // the report as `infer --check` prints it into a pipe (not wrapped)
  std::string json;           // and as `infer --check --json` does
  // Schema 2 manifests (one [[backend]] per CUDA major): the backend whose items all hold, the one
  // a Classifier runs ("cu12"; empty when none does), and each backend's outcome in the manifest's
  // order. Empty for a schema 1 manifest.
  std::string backend;
  struct Backend {
    std::string name;  // "cu13"
    bool runs = false;
    std::string first_failure;  // what stops it, one line; empty when it runs
    std::string fix;            // and what would let it run
  };
  std::vector<Backend> backends;
  std::string manifest_sha256;  // of the manifest file checked, 64 hex digits
  // The report as Kubernetes node labels, {name, value}, for a scheduler to place work by
  // (docs/kubernetes.md lists them): manifest-holds, backend, driver-release, cudnn-version,
  // gpu-product ... Each name goes under the prefix "infer.feature.node.kubernetes.io/"; each value
  // is a valid label value (63 characters of [A-Za-z0-9._-] at most), made so from what the probes
  // read. A value that is unknown is left out.
  std::vector<std::pair<std::string, std::string>> labels;
};

// What this library was compiled with: CUDA and cuDNN of its GPU module (empty without one), and
// the compiler ("GNU 12.2.0").
struct BuildInfo {
  std::string cuda;  // the CUDA 13 backend's
  std::string cudnn;
  std::string compiler;
  // Every GPU backend this build has, one per CUDA major, newest first: {"cu13", "13.0.88",
  // "9.19.0"}, {"cu12", "12.0", "9.10.2"}.
  struct Backend {
    std::string name;
    std::string cuda;
    std::string cudnn;
  };
  std::vector<Backend> backends;
};
INFER_API BuildInfo build_info();

// What this library finds at run time: the CPU backend's libraries, and the GPU module with the
// NVIDIA libraries it loads. Versions as NVIDIA writes them ("13.0", "9.19.0"); empty where a
// library reported none.
struct RuntimeInfo {
  std::string cpu_libraries;  // "oneDNN 2.6.3 (AVX-512, 2 threads); plain kernels: OpenBLAS 0.3.21 ... (2 threads)"
  bool gpu_loaded = false;    // the GPU module loaded; else gpu_problem says why not
  std::string gpu_problem;    // a GpuUnavailableError's what()
  std::string gpu_backend;    // the backend chosen ("cu12"), when one loaded
  std::vector<std::string>
      gpu_choice;  // why: each backend's verdict, "cu13: the NVIDIA driver supports CUDA 12.4; ..."
  std::filesystem::path gpu_module;
  std::string cuda_runtime;           // cudaRuntimeGetVersion
  std::string cuda_runtime_built;     // the CUDA runtime the module was compiled against
  std::string cuda_driver;            // the highest CUDA the driver supports; empty: no NVIDIA driver
  std::string cudnn;                  // cudnnGetVersion
  std::string cudnn_built;            // the cuDNN the module was compiled against
  std::string cudnn_cuda;             // the CUDA runtime this cuDNN was built for (cudnnGetCudartVersion)
  std::vector<std::string> standins;  // as EnvironmentReport::standins
};
// Loads the GPU module (in a child process first, as a Classifier does) and probes NVIDIA's
// libraries as check_environment() does, under the same lock. A missing or broken GPU module is
// gpu_problem, not an error.
INFER_API RuntimeInfo runtime_info();

// Checks this machine and the model files the manifest lists against `manifest` (empty: the
// VERSIONS.toml installed with the library). Probing runs the NVIDIA libraries in a child process
// (fork) with a time limit, so a broken install gives a report, never a crash; the result is kept
// for the process. Calls are serialised with the construction of Classifiers (one lock for the
// process); as for those, make them while no other thread is inside the library. Throws InputError
// when the manifest cannot be read or is invalid.
// cuda_major (12, 13) checks that GPU backend only (a schema 2 manifest without it fails, naming
// it); 0 takes the INFER_CUDA environment variable when set, else checks every backend.
INFER_API EnvironmentReport check_environment(const std::filesystem::path& manifest = {}, int cuda_major = 0);
// The same, with `table` wrapped for a terminal `table_width` columns wide: broken only at spaces,
// never inside a path, digest or version (a row whose words do not fit the columns is printed as a
// block of labelled lines). 0, as in the form above: nothing is wrapped, each row is one line, for
// a pipe, a file or a log. Whether there is a terminal, and how wide, is the caller's to know.
INFER_API EnvironmentReport check_environment(const std::filesystem::path& manifest, int cuda_major,
                                              std::size_t table_width);

// Writes report.labels as a Node Feature Discovery local feature file (nfd-worker publishes each
// line as a node label; docs/kubernetes.md), which NFD drops `valid_for` from now unless the file is
// rewritten. Written to a temporary dot-file beside `path` (which NFD does not read) and renamed:
// never half a file. Throws InputError when `path` cannot be written.
INFER_API void write_node_features(const std::filesystem::path& path, const EnvironmentReport& report,
                                   std::chrono::seconds valid_for);

// What write_environment_manifest wrote.
struct WrittenManifest {
  std::vector<std::filesystem::path> model_files;  // listed with their SHA-256
  std::string model_problem;  // why the model's weights are not listed (it does not load); else empty
};
// Writes a manifest describing this machine to `path`, listing `model` (empty: the installed one)
// and its weights with their SHA-256. Written to a temporary file and renamed: never half a file.
// Throws InputError when `path` cannot be written.
INFER_API WrittenManifest write_environment_manifest(const std::filesystem::path& path,
                                                     const std::filesystem::path& model = {});

}  // namespace infer

// The boundary between the engine and the cuDNN backend library (libinfer_cudnn.so on Linux,
// infer_cudnn.dll on Windows), which the engine loads at run time (dlopen, LoadLibraryExW) so that
// `infer` starts, and can say why the GPU is unusable, on a machine without a driver, a CUDA
// runtime or cuDNN.
//
// The library exports one C function, infer_gpu_plugin(), returning a table of C functions. No
// C++ exception crosses the boundary: failures come back as a status and a message. Both sides
// are built from the same sources in one build; abi_version, the Network layout and the C++
// standard library check that. The table passes a Network, whose members are C++ standard library
// types: an engine built with mingw-w64 (libstdc++) cannot hand one to a DLL built with MSVC (its
// own STL, another layout of std::string and std::vector), so both must come from one compiler.
#pragma once

#include <cstddef>
#include <cstdint>

namespace infer {
class Network;
}

extern "C" {

// Bump whenever this table or any type it passes (Network, Layer, ...) changes. A change to the list
// of ops (graph/ops.h) needs no bump: ops_hash carries it.
#define INFER_GPU_PLUGIN_ABI 9

// The C++ standard library whose layout the Network's members have (its headers define these).
#if defined(_MSVC_STL_VERSION)
#define INFER_GPU_CXX_LIBRARY 2u /* Microsoft's STL */
#elif defined(_LIBCPP_VERSION)
#define INFER_GPU_CXX_LIBRARY 3u /* libc++ */
#elif defined(__GLIBCXX__)
#define INFER_GPU_CXX_LIBRARY 1u /* libstdc++ */
#else
#define INFER_GPU_CXX_LIBRARY 0u
#endif

// Limits of the device top-k selection (backends/cudnn/kernels/top_k.cuh: one block of threads per
// sample, k scans of the row). Here, not in the kernel's header, so that the engine can check them without
// CUDA headers.
#define INFER_GPU_TOP_K_MAX_CLASSES 65536
#define INFER_GPU_TOP_K_MAX_SAMPLES 65535

enum InferGpuStatus : int {
  INFER_GPU_OK = 0,
  INFER_GPU_UNAVAILABLE = 1,  // no driver, no device, runtime or cuDNN unusable: fall back to CPU
  INFER_GPU_ERROR = 2,        // a call failed while in use: report, do not switch devices silently
  INFER_GPU_BAD_ARGUMENT = 3,
};

struct InferGpuVersions {
  int cuda_runtime_built;   // CUDART_VERSION the library was compiled with, e.g. 13000
  int cuda_runtime_loaded;  // cudaRuntimeGetVersion; 0 if unknown
  int cuda_driver;          // cudaDriverGetVersion: the highest CUDA the driver supports; 0 if none
  int cudnn_built;          // CUDNN_VERSION at compile time, e.g. 91900
  int cudnn_loaded;         // cudnnGetVersion()
  int cudnn_loaded_cudart;  // cudnnGetCudartVersion(): the CUDA runtime that cuDNN was built for
};

// Device 0 as this module's CUDA runtime sees it (InferGpuPlugin::device).
struct InferGpuDevice {
  int count;     // cudaGetDeviceCount; 0 when it failed
  int cc_major;  // compute capability of device 0; 0 when unknown
  int cc_minor;
  int error;            // the cudaError_t of cudaGetDeviceCount when it failed (35: the driver is too old
                        // for this runtime; 100: no device); else 0
  char error_name[64];  // its name, "cudaErrorInsufficientDriver"; NUL-terminated
};

// infer::GpuOptions (backend.h) as C. Strings and the log context must outlive the executor.
struct InferGpuOptions {
  int precision;                             // infer::Precision: 0 fp32, 1 tf32, 2 fp16
  int fold_batchnorm;                        // 0 or 1
  int cuda_graphs;                           // 0 or 1
  int autotune;                              // 0 or 1
  const char* autotune_cache;                // NULL or "": the default cache file
  int deterministic;                         // 0 or 1
  void (*log)(void* ctx, const char* line);  // NULL: silent; must not throw or longjmp
  void* log_ctx;
};

// infer::BatchTiming (backend.h) as C: the device time of an executor's last completed pass.
struct InferGpuTiming {
  int available;      // 1: the times below are the last pass's; 0: none (see last_timing)
  double h2d_ms;      // input copy
  double compute_ms;  // end of the input copy to the start of the result copy
  double d2h_ms;      // result copy (top_k: both copies)
  double device_ms;   // start of the input copy to the end of the result copy
};

struct InferGpuPlugin {
  std::uint32_t abi_version;   // INFER_GPU_PLUGIN_ABI
  std::uint32_t network_size;  // sizeof(infer::Network) as the library saw it
  std::uint64_t ops_hash;      // infer::ops_hash() as the library saw it: the same ops in the same order
  std::uint32_t cxx_library;   // INFER_GPU_CXX_LIBRARY as the library saw it

  // Versions; never needs a GPU. Returns INFER_GPU_OK.
  int (*versions)(InferGpuVersions* out);

  // Asks the CUDA runtime for the devices (it initialises the driver: the loader calls this in its
  // trial-load child only, gpu_library_posix.cpp). Returns INFER_GPU_OK.
  int (*device)(InferGpuDevice* out);

  // Builds an executor for the network (which must outlive it) and up to max_batch samples:
  // device selection, cuDNN handle, every descriptor, algorithm and buffer. On failure returns
  // a status and writes a one-line message (NUL-terminated, truncated to message_size).
  int (*create)(const infer::Network* network, int max_batch, const InferGpuOptions* options, void** executor,
                char* message, std::size_t message_size);

  // Runs layers [0, layer_count) on n samples; input and output in host memory (see backend.h).
  int (*forward)(void* executor, const float* input, int n, float* output, std::size_t layer_count, char* message,
                 std::size_t message_size);

  // Per sample the k best outputs of the last layer (see Backend::top_k in backend.h), selected on
  // the device: classes and scores hold n * k values each, host memory. Handles at most
  // INFER_GPU_TOP_K_MAX_CLASSES outputs per sample and INFER_GPU_TOP_K_MAX_SAMPLES samples per
  // call (INFER_GPU_BAD_ARGUMENT beyond); the engine selects on the host beyond them.
  int (*top_k)(void* executor, const float* input, int n, int k, int* classes, float* scores, char* message,
               std::size_t message_size);

  // "NVIDIA H200 (sm_90), cuDNN 9.19.0, CUDA runtime 13.0"; valid while the executor lives.
  const char* (*describe)(void* executor);

  void (*destroy)(void* executor);

  // The device time of the last forward or top_k call that returned INFER_GPU_OK, from CUDA events
  // around the copies (cudaEventElapsedTime, about 0.5 us resolution). available = 0 before the
  // first such call, after a call that failed, and when the events could not be read (the executor
  // logs why). Returns INFER_GPU_OK, or INFER_GPU_BAD_ARGUMENT for a null pointer.
  int (*last_timing)(void* executor, InferGpuTiming* out);

  // Where building the executor spent its time, phase `index` in order (Backend::startup_phases):
  // its name (valid while the executor lives) and milliseconds. INFER_GPU_BAD_ARGUMENT past the last
  // phase or for a null pointer.
  int (*startup_phase)(void* executor, std::size_t index, const char** name, double* ms);
};

// The one symbol the library exports.
#ifdef _WIN32
#define INFER_GPU_PLUGIN_EXPORT __declspec(dllexport)
#else
#define INFER_GPU_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif
INFER_GPU_PLUGIN_EXPORT const InferGpuPlugin* infer_gpu_plugin(void);
typedef const InferGpuPlugin* (*InferGpuPluginEntry)(void);
}

// The device model of the CPU stand-in for the CUDA runtime and cuDNN (test infrastructure: never
// installed, never reported as a GPU). Shared by the stand-in's libcudart.so.13 and .so.12, which
// implement it, and its libcudnn.so.9, which enqueues its work through it. Like NVIDIA's cuDNN, the
// stand-in's names no libcudart (it loads alone, as the environment probe loads it): it finds the
// stand-in libcudart of the process when it first needs the device (cudnn/device_api.cpp, through
// infer_standin_device_api below), so that one cuDNN stand-in serves both backends.
//
// "Device memory" is host memory handed out by the stand-in's cudaMalloc and registered here, so
// that every pointer a call is given can be checked against its allocation: a pointer outside every
// live device allocation (a host pointer, a freed one, one past the end for the extent a descriptor
// implies) ends the process with one line on stderr naming the call, the argument and the problem,
// like a compute-sanitizer report. The process ends (abort) rather than returning a status: a status
// can be taken for "configuration not supported" and skipped, which would hide the bug.
//
// Streams are queues. Work enqueued on a stream runs later, in stream order, when something waits
// for it (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize, the implicit
// synchronisation of cudaFree): the host sees results only after it synchronises, as on a GPU, and
// host memory read by queued work must still be valid when the work runs. Inside a stream capture,
// enqueued work becomes a node of the graph instead and runs at each cudaGraphLaunch.
//
// Thread safety: every function may be called from any thread; the stand-in serialises them.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace standin {

// The name the stand-in gives its one device, in cudaGetDeviceProperties, NVML and every report.
inline constexpr const char* kDeviceName = "infer CPU stand-in (not a GPU)";

// Bytes [p, p + bytes) that a call reads or writes; `arg` is the argument's name in the API
// ("x", "workSpace", "dst").
struct Range {
  const void* p = nullptr;
  std::size_t bytes = 0;
  const char* arg = "";
};

// Ends the process (see above) unless [r.p, r.p + r.bytes) lies inside one live device allocation.
// A null pointer with bytes == 0 is accepted (nothing is accessed).
void require_device(const char* call, const Range& r);

// Ends the process unless p is a non-null pointer outside device memory: host-side arguments
// (alpha and beta scaling factors, perf arrays, out-parameters).
void require_host(const char* call, const void* p, const char* arg);

// Ends the process with "infer CPU stand-in: <call>: <problem>" (a misuse no status can report).
[[noreturn]] void fail(const char* call, const std::string& problem);

// Enqueues `work` on `stream` (a cudaStream_t; nullptr is the legacy default stream). Each range is
// checked now with require_device and again right before the work runs (a buffer freed in between
// is a use after free). Returns 0 (cudaSuccess) or the cudaError_t the runtime would return: an
// unknown stream (cudaErrorInvalidResourceHandle), a sticky error from earlier work.
int enqueue(void* stream, const char* call, std::vector<Range> ranges, std::function<void()> work);

// Whether `stream` is being captured into a graph now.
bool capturing(void* stream);

// Runs everything queued on `stream` (cudaStreamSynchronize). During a capture this is illegal: it
// returns cudaErrorStreamCaptureUnsupported and invalidates the capture, as the runtime does.
int synchronize(void* stream);

// The CUDA runtime version the stand-in's libcudart was built as (13000 or 12000): what the
// stand-in's cuDNN reports as cudnnGetCudartVersion, as cuDNN for that CUDA major does.
int runtime_version();

// Whether a device is selected and usable (the stand-in's cudaSetDevice/cudaGetDeviceCount state);
// cudnnCreate refuses without one.
bool device_usable();

// The functions above as a table, which each stand-in libcudart exports as
// infer_standin_device_api() for the stand-in's cuDNN.
struct DeviceApi {
  void (*require_device)(const char* call, const Range& r);
  void (*require_host)(const char* call, const void* p, const char* arg);
  void (*fail)(const char* call, const std::string& problem);
  int (*enqueue)(void* stream, const char* call, std::vector<Range> ranges, std::function<void()> work);
  bool (*capturing)(void* stream);
  int (*synchronize)(void* stream);
  bool (*device_usable)();
  int (*runtime_version)();
};

}  // namespace standin

extern "C" const standin::DeviceApi* infer_standin_device_api(void);

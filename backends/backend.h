// The interface every backend implements. A backend is built once for a network and a maximum
// batch size: it plans and allocates everything then, so forward() and top_k() allocate nothing
// (the default top_k() allocates its one buffer on its first call; the GPU backend grows its
// convolution workspace on the first pass at a batch size that needs more than 1 and max_batch do).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "infer/device.h"
#include "graph/network.h"

namespace infer {

// Precision (the GPU backend's arithmetic) and precision_name(): infer/device.h, public.

// "fp32", "tf32" or "fp16" (exact, lower case); nullopt for anything else.
inline std::optional<Precision> parse_precision(std::string_view s) {
  for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Fp16}) {
    if (s == precision_name(p)) return p;
  }
  return std::nullopt;
}

struct GpuOptions {
  Precision precision = Precision::Fp32;  // Fp32: FMA math, no TF32 (results within 1e-4 of the CPU)
  bool fold_batchnorm = true;             // false keeps the explicit cuDNN batch-norm op (tests use both)
  bool cuda_graphs = true;                // capture each batch size once and replay it
  bool autotune = false;                  // measure algorithms (cudnnFindConvolutionForwardAlgorithmEx) and cache them
  std::string autotune_cache;             // cache file; empty = default_autotune_cache_path()
  // Only convolution algorithms cuDNN reports as CUDNN_DETERMINISTIC (heuristics and autotune):
  // bitwise reproducible results from run to run, at some cost in speed.
  bool deterministic = false;
  // Verbose lines (chosen algorithm per layer, cache use, graph fallback); empty = silent.
  std::function<void(const std::string&)> log;
  // The GPU backend's CUDA major (12, 13); 0 chooses the newest that runs here (gpu_choice.h),
  // unless the environment variable INFER_CUDA names one.
  int cuda_major = 0;
  std::string cuda_major_reason;  // why that one, for the reports ("asked for" when empty)
};

// Device time of one batch, from CUDA events recorded on the backend's stream around the copies
// (milliseconds, each within about 0.5 us, the resolution of cudaEventElapsedTime):
//   h2d_ms      the input copy, pinned host staging to device
//   compute_ms  from the end of that copy to the start of the result copy: every layer (and, at
//               reduced precision, the layout conversions; for top_k(), the selection kernel)
//   d2h_ms      the result copy (or, for top_k(), the copies of classes and scores) to pinned host
//   device_ms   from the start of the input copy to the end of the result copy: the three parts'
//               sum, up to the resolution
// Not included: the host memcpy into and out of the staging buffers, launch overhead before the
// first copy starts, the final synchronisation. So device_ms is less than the host's end-to-end
// time of the call.
struct BatchTiming {
  double h2d_ms = 0.0;
  double compute_ms = 0.0;
  double d2h_ms = 0.0;
  double device_ms = 0.0;
};

// One phase of building a backend (Backend::startup_phases): its name and the host's wall-clock
// milliseconds from the end of the phase before it. Device work a phase queues and does not wait
// for is counted where it is waited for (at the latest, the build's last phase).
struct StartupPhase {
  std::string name;
  double ms = 0.0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // One line for users: "cpu: OpenBLAS 0.3.21, 2 threads", "gpu: NVIDIA H200, cuDNN 9.19.0".
  virtual std::string description() const = 0;
  // "cpu" or "gpu".
  virtual const char* device() const = 0;
  virtual int max_batch() const = 0;

  // Runs layers [0, layer_count) on n samples (1 <= n <= max_batch()).
  //   input:  n x C x H x W floats (NCHW, already normalised), host memory
  //   output: n x out.size() floats of layer layer_count-1, host memory
  // layer_count < number of layers gives intermediate results (the logits before a softmax, say).
  // Throws GpuError (GPU) or std::invalid_argument for a bad n or layer_count.
  virtual void forward(const float* input, int n, float* output, std::size_t layer_count) = 0;

  void forward(const float* input, int n, float* output) { forward(input, n, output, layer_count()); }
  virtual std::size_t layer_count() const = 0;
  // Floats per sample of the last layer's output (Network::output_dims().size()).
  virtual std::size_t output_size() const = 0;

  // Per sample, the k largest outputs of the last layer, best first:
  //   classes[i*k + j], scores[i*k + j] for sample i < n and rank j < k (host memory).
  // Order: larger score first; equal scores: lower index first; NaN ranks above every number
  // (as PyTorch's topk), so a broken output shows up first rather than hiding.
  // Throws std::invalid_argument unless 1 <= k <= the last layer's output size, and whatever
  // forward() throws. The default runs forward() into a buffer of this backend (allocated on the
  // first call) and selects on the host; the GPU backend selects on the device, within the limits
  // of gpu_plugin.h (INFER_GPU_TOP_K_MAX_CLASSES, INFER_GPU_TOP_K_MAX_SAMPLES), and as the default
  // beyond them.
  virtual void top_k(const float* input, int n, int k, int* classes, float* scores);

  // The device time of the last forward() or top_k() call (GPU); nullopt on the CPU, before the
  // first call, after a call that the device refused or failed (it threw), and when the device's
  // events could not be read (the GPU backend logs why, once). top_k() beyond the device's limits
  // (the default top_k()) reports the forward() it ran. Allocates nothing.
  virtual std::optional<BatchTiming> last_timing() const { return std::nullopt; }

  // Where building this backend spent its time, in order (GPU: loading the module, the CUDA
  // context, the cuDNN handle, the plan, the buffers and weights, each convolution's algorithm
  // choice); empty for a backend that does not time its build (the CPU).
  virtual std::vector<StartupPhase> startup_phases() const { return {}; }

 protected:
  // forward()'s argument checks: throws std::invalid_argument ("batch size out of range") unless
  // 1 <= n <= max_batch(), and ("layer_count out of range") unless 1 <= layer_count <= layer_count().
  void check_forward_arguments(int n, std::size_t layer_count) const;

 private:
  std::vector<float> top_k_buffer_;  // max_batch x output size, for the default top_k()
};

// The k best (index, score) pairs of one row of `size` scores, with top_k()'s order. Requires
// 1 <= k <= size.
void select_top_k(const float* row, std::size_t size, int k, int* classes, float* scores);

}  // namespace infer

// The C boundary of libinfer_cudnn.so (see gpu_plugin.h): the one exported symbol and the table
// of functions wrapping Executor. No exception leaves this file: each entry point turns it into a
// status and a one-line message.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

#include "backends/gpu_plugin.h"
#include "backends/cudnn/executor.h"

namespace infer::cudnn {
namespace {

// Copies text into message (NUL-terminated, truncated to size) and returns status.
int report(int status, const char* text, char* message, std::size_t size) {
  if (message && size > 0) {
    const std::size_t n = std::min(std::strlen(text), size - 1);
    std::memcpy(message, text, n);
    message[n] = '\0';
  }
  return status;
}

// Runs body, mapping what it throws to a status (the order matters: most specific first).
template <typename Body>
int guarded(char* message, std::size_t size, Body&& body) {
  try {
    body();
    return report(INFER_GPU_OK, "", message, size);
  } catch (const GpuUnavailableError& e) {
    return report(INFER_GPU_UNAVAILABLE, e.what(), message, size);
  } catch (const GpuError& e) {
    return report(INFER_GPU_ERROR, e.what(), message, size);
  } catch (const std::invalid_argument& e) {
    return report(INFER_GPU_BAD_ARGUMENT, e.what(), message, size);
  } catch (const std::bad_alloc&) {
    return report(INFER_GPU_ERROR, "out of host memory in the GPU backend", message, size);
  } catch (const std::exception& e) {
    return report(INFER_GPU_ERROR, e.what(), message, size);
  } catch (...) {
    return report(INFER_GPU_ERROR, "unknown exception in the GPU backend", message, size);
  }
}

int versions(InferGpuVersions* out) {
  if (!out) return INFER_GPU_BAD_ARGUMENT;
  *out = InferGpuVersions{};
  out->cuda_runtime_built = CUDART_VERSION;
  int v = 0;
  out->cuda_runtime_loaded = cudaRuntimeGetVersion(&v) == cudaSuccess ? v : 0;
  v = 0;
  out->cuda_driver = cudaDriverGetVersion(&v) == cudaSuccess ? v : 0;  // 0 when no driver is installed
  out->cudnn_built = CUDNN_VERSION;
  out->cudnn_loaded = static_cast<int>(cudnnGetVersion());
  out->cudnn_loaded_cudart = static_cast<int>(cudnnGetCudartVersion());
  return INFER_GPU_OK;
}

int device(InferGpuDevice* out) {
  if (!out) return INFER_GPU_BAD_ARGUMENT;
  *out = InferGpuDevice{};
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    out->error = static_cast<int>(e);
    std::snprintf(out->error_name, sizeof out->error_name, "%s", cudaGetErrorName(e));
    return INFER_GPU_OK;
  }
  out->count = count;
  if (count > 0 && cudaDeviceGetAttribute(&out->cc_major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess) {
    static_cast<void>(cudaDeviceGetAttribute(&out->cc_minor, cudaDevAttrComputeCapabilityMinor, 0));
  }
  return INFER_GPU_OK;
}

// InferGpuOptions (C) to GpuOptions; a null options pointer means the defaults.
GpuOptions to_options(const InferGpuOptions* c) {
  GpuOptions o;
  if (!c) return o;
  if (c->precision < static_cast<int>(Precision::Fp32) || c->precision > static_cast<int>(Precision::Fp16)) {
    throw std::invalid_argument("precision " + std::to_string(c->precision) + " is not 0 (fp32), 1 (tf32) or 2 (fp16)");
  }
  o.precision = static_cast<Precision>(c->precision);
  o.fold_batchnorm = c->fold_batchnorm != 0;
  o.cuda_graphs = c->cuda_graphs != 0;
  o.autotune = c->autotune != 0;
  if (c->autotune_cache) o.autotune_cache = c->autotune_cache;
  o.deterministic = c->deterministic != 0;
  if (c->log) {
    o.log = [log = c->log, ctx = c->log_ctx](const std::string& line) { log(ctx, line.c_str()); };
  }
  return o;
}

int create(const Network* network, int max_batch, const InferGpuOptions* options, void** executor, char* message,
           std::size_t message_size) {
  return guarded(message, message_size, [&] {
    if (!network || !executor) throw std::invalid_argument("network and executor must not be null");
    if (max_batch < 1) throw std::invalid_argument("max_batch must be at least 1, found " + std::to_string(max_batch));
    *executor = nullptr;
    *executor = new Executor(*network, max_batch, to_options(options));
  });
}

int forward(void* executor, const float* input, int n, float* output, std::size_t layer_count, char* message,
            std::size_t message_size) {
  return guarded(message, message_size, [&] {
    if (!executor) throw std::invalid_argument("executor must not be null");
    static_cast<Executor*>(executor)->forward(input, n, output, layer_count);
  });
}

int top_k(void* executor, const float* input, int n, int k, int* classes, float* scores, char* message,
          std::size_t message_size) {
  return guarded(message, message_size, [&] {
    if (!executor) throw std::invalid_argument("executor must not be null");
    static_cast<Executor*>(executor)->top_k(input, n, k, classes, scores);
  });
}

const char* describe(void* executor) {
  return executor ? static_cast<Executor*>(executor)->description().c_str() : "no executor";
}

void destroy(void* executor) { delete static_cast<Executor*>(executor); }

int last_timing(void* executor, InferGpuTiming* out) {
  if (!executor || !out) return INFER_GPU_BAD_ARGUMENT;
  *out = InferGpuTiming{};
  if (const std::optional<BatchTiming>& t = static_cast<const Executor*>(executor)->last_timing()) {
    *out = InferGpuTiming{1, t->h2d_ms, t->compute_ms, t->d2h_ms, t->device_ms};
  }
  return INFER_GPU_OK;
}

int startup_phase(void* executor, std::size_t index, const char** name, double* ms) {
  if (!executor || !name || !ms) return INFER_GPU_BAD_ARGUMENT;
  const std::vector<StartupPhase>& phases = static_cast<const Executor*>(executor)->startup_phases();
  if (index >= phases.size()) return INFER_GPU_BAD_ARGUMENT;
  *name = phases[index].name.c_str();
  *ms = phases[index].ms;
  return INFER_GPU_OK;
}

const InferGpuPlugin kPlugin = {
    INFER_GPU_PLUGIN_ABI,
    static_cast<std::uint32_t>(sizeof(Network)),
    ops_hash(),
    INFER_GPU_CXX_LIBRARY,
    versions,
    device,
    create,
    forward,
    top_k,
    describe,
    destroy,
    last_timing,
    startup_phase,
};

}  // namespace
}  // namespace infer::cudnn

extern "C" INFER_GPU_PLUGIN_EXPORT const InferGpuPlugin* infer_gpu_plugin(void) {
  return &infer::cudnn::kPlugin;
}

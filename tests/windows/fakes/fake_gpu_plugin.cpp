// A stand-in for infer_cudnn.dll (the GPU backend, built with MSVC on Windows) for infer.exe's
// loader under wine: the plugin table of backends/gpu_plugin.h with this build's ABI, whose create()
// answers INFER_GPU_UNAVAILABLE as the real one does on a machine without a usable GPU. Built with
// FAKE_CRASH_IN_VERSIONS, its versions() dereferences a null pointer instead, as the real one's
// cudnnGetVersion() does when a foreign cudnn_graph64_9.dll is loaded with cudnn64_9.dll.
#include <cstdio>

#include "backends/gpu_plugin.h"

// FAKE_CXX_LIBRARY: another standard library's code, as an MSVC-built infer_cudnn.dll has.
#ifndef FAKE_CXX_LIBRARY
#define FAKE_CXX_LIBRARY INFER_GPU_CXX_LIBRARY
#endif
#include "graph/network.h"
#include "graph/ops.h"

namespace {

int versions(InferGpuVersions* out) {
#ifdef FAKE_CRASH_IN_VERSIONS
  volatile int* nowhere = nullptr;
  *nowhere = 1;
#endif
  *out = InferGpuVersions{};
  return INFER_GPU_OK;
}

int create(const infer::Network*, int, const InferGpuOptions*, void** executor, char* message, std::size_t size) {
  *executor = nullptr;
  std::snprintf(message, size, "fake GPU backend: no CUDA device here");
  return INFER_GPU_UNAVAILABLE;
}

int forward(void*, const float*, int, float*, std::size_t, char*, std::size_t) { return INFER_GPU_ERROR; }
int top_k(void*, const float*, int, int, int*, float*, char*, std::size_t) { return INFER_GPU_ERROR; }
const char* describe(void*) { return "fake"; }
void destroy(void*) {}
int last_timing(void*, InferGpuTiming* out) {
  *out = InferGpuTiming{};
  return INFER_GPU_OK;
}

int startup_phase(void*, std::size_t, const char**, double*) { return INFER_GPU_BAD_ARGUMENT; }

int device(InferGpuDevice* out) {
  *out = InferGpuDevice{};
  return INFER_GPU_OK;
}

const InferGpuPlugin kPlugin = {INFER_GPU_PLUGIN_ABI,
                                sizeof(infer::Network),
                                infer::ops_hash(),
                                FAKE_CXX_LIBRARY,
                                versions,
                                device,
                                create,
                                forward,
                                top_k,
                                describe,
                                destroy,
                                last_timing,
                                startup_phase};

}  // namespace

extern "C" INFER_GPU_PLUGIN_EXPORT const InferGpuPlugin* infer_gpu_plugin(void) { return &kPlugin; }

// A GPU backend library as the engine loads it (backends/gpu_plugin.h) whose ABI version and Network
// size match, built with FAKE_OPS_HASH_DELTA added to ops_hash(): with 1 it stands for a plugin
// built from another list of ops (an op added or moved), which the engine must refuse; with 0 it
// is the control that the engine accepts. Nothing but versions() and device() is ever called.
#include <cstring>

#include "backends/gpu_plugin.h"
#include "graph/network.h"

namespace {

int versions(InferGpuVersions* out) {
  std::memset(out, 0, sizeof *out);
  return INFER_GPU_OK;
}

int device(InferGpuDevice* out) {
  std::memset(out, 0, sizeof *out);
  return INFER_GPU_OK;
}

const InferGpuPlugin kPlugin = {
    INFER_GPU_PLUGIN_ABI,
    static_cast<std::uint32_t>(sizeof(infer::Network)),
    infer::ops_hash() + FAKE_OPS_HASH_DELTA,
    INFER_GPU_CXX_LIBRARY,
    versions,
    device,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

extern "C" INFER_GPU_PLUGIN_EXPORT const InferGpuPlugin* infer_gpu_plugin(void) { return &kPlugin; }

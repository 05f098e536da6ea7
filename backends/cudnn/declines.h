// How cuDNN declines a configuration, shared by the convolution algorithms' choice
// (convolution_algorithms.cpp: build-time probes) and the convolution steps (convolution.cpp: a
// fused call that declines a batch size during a forward pass).
#pragma once

#include "backends/cudnn/check.h"

namespace infer::cudnn {

// Statuses with which cuDNN declines a configuration, "not supported for this configuration" (as
// opposed to failing while running it): every NOT_SUPPORTED status, and the plain BAD_PARAM, with
// which the legacy API reports unsupported configurations too. The specific BAD_PARAM_* statuses
// (NULL_POINTER, MISALIGNED_POINTER, SIZE_INSUFFICIENT for the workspace, OUT_OF_BOUND,
// SHAPE_MISMATCH, STREAM_MISMATCH, DESCRIPTOR_TYPE, ...) point at our own arguments: a bug here,
// which a probe must not take for a decline and hide behind another algorithm (issue 32: half the
// queried workspace passed every test, the probes quietly choosing an algorithm without one).
inline bool declines(cudnnStatus_t s) {
  return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED || s == CUDNN_STATUS_BAD_PARAM;
}

// During a forward pass, the statuses with which the fused call may still decline a batch size
// that the build-time probes (n = 1 and n = max_batch) did not try: cuDNN picks its engines per
// shape, so a shape, launch-configuration or shared-memory limit can be met in between. The
// separate calls then do the same work (their algorithm passed the probes too); the switch is
// logged and remembered per batch size. The plain CUDNN_STATUS_BAD_PARAM counts as such a decline
// because the legacy API reports unsupported configurations with it too. Everything else is a
// GpuError naming the layer and the call, never a silent switch:
//   - the specific BAD_PARAM_* statuses (NULL_POINTER, MISALIGNED_POINTER, SIZE_INSUFFICIENT for
//     the workspace, OUT_OF_BOUND, SHAPE_MISMATCH, ...): the same call passed its probes with the
//     same buffers and workspace, so these mean a bug here, which the separate path would hide;
//   - the CUDA-graph statuses (BAD_PARAM_CUDA_GRAPH_MISMATCH, NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API):
//     thrown, they reach Executor::capture, which logs why and runs that pass directly, instead of
//     capturing a different computation than the one chosen;
//   - the other NOT_SUPPORTED_* statuses (data type, layout, architecture, driver, ...) do not
//     depend on the batch size: the probes would have met them.
// "Declines" in the wider sense (every NOT_SUPPORTED status) belongs to the probes only.
inline bool declines_this_batch_size(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_BAD_PARAM:
    case CUDNN_STATUS_NOT_SUPPORTED:
    case CUDNN_STATUS_NOT_SUPPORTED_SHAPE:
    case CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT:
    case CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM: return true;
    default: return false;
  }
}

// While probing at build time, a runtime-compiled engine whose NVRTC compilation failed
// (CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED) also means "use another candidate": that engine
// cannot run this configuration. Other internal errors and execution failures do not.
inline bool probe_declines(cudnnStatus_t s) {
  return declines(s) || s == CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED;
}

// A declined probe leaves its message in cuDNN's last-error buffer; read it away so that the
// detail of a later real failure (check.h) is not a stale probe message.
inline void clear_last_error() {
  char discard[256];
  cudnnGetLastErrorString(discard, sizeof discard);
}

}  // namespace infer::cudnn

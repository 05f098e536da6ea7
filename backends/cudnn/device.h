// Device and library setup of the cuDNN backend: selecting the GPU, the executor's stream and
// cuDNN handle, and the classification of CUDA errors that decide between "no GPU here" and "a
// call failed". Used by the Executor's constructor (executor.h) and its passes.
#pragma once

#include <exception>
#include <string>

#include "backends/cudnn/check.h"

namespace infer::cudnn {

// Selects device 0 (the first of $CUDA_VISIBLE_DEVICES) and returns its name and compute
// capability, "NVIDIA H200 (sm_90)", the device part of autotune keys. Throws GpuUnavailableError
// (no driver, no device, a driver too old: one line naming the call and its error) or GpuError.
std::string select_device();

// "NVIDIA H200 (sm_90), cuDNN 9.19.0, CUDA runtime 13.0" for the device name select_device() gave.
std::string describe_device(const std::string& name);

// A non-blocking stream on the current device. Throws GpuError.
Stream create_stream();

// A cuDNN handle bound to `stream`, after checking that the loaded cuDNN (and its sub-libraries)
// is the major version this backend was built for. Throws GpuUnavailableError when cuDNN is
// unusable here (missing or mismatched library, unsupported GPU), GpuError otherwise.
CudnnHandle create_handle(cudaStream_t stream);

// Errors that driver_types.h documents as leaving the process in an inconsistent state: every later
// CUDA call returns them again, and only a restart recovers (plus cudaErrorECCUncorrectable).
bool leaves_context_unusable(cudaError_t e);

// Synchronises a stream when it goes out of scope because of an exception, so that work already
// queued (copies from host memory about to be freed, kernels on device buffers about to be
// released) completes before the objects it uses are destroyed. Its own error is ignored: the
// exception in flight is the one to report.
class SyncOnUnwind {
 public:
  explicit SyncOnUnwind(cudaStream_t stream) : stream_(stream) {}
  ~SyncOnUnwind() {
    if (std::uncaught_exceptions() > exceptions_) static_cast<void>(cudaStreamSynchronize(stream_));
  }
  SyncOnUnwind(const SyncOnUnwind&) = delete;
  SyncOnUnwind& operator=(const SyncOnUnwind&) = delete;

 private:
  cudaStream_t stream_;
  int exceptions_ = std::uncaught_exceptions();
};

}  // namespace infer::cudnn

// One pass of the executor: forward() or top_k() on n samples, run directly or as a CUDA graph,
// and its device timing.
//
// A pass (enqueue()): input copy from the pinned staging buffer, [Fp16: conversion to half NHWC],
// every step's cuDNN calls, [a half output converted to float], [the top-k kernel], the copy of
// the results into pinned staging. A top-k pass over a network that ends in a softmax over 1 x 1
// outputs (Plan::ends_in_class_softmax) runs that softmax inside the top-k kernel instead
// (softmax_top_k_kernel): one launch where there were a softmax, [a conversion,] and a selection. Nothing in it
// allocates, creates a descriptor or synchronises; execute() adds the one cudaStreamSynchronize.
//
// Timing: four events, created once, are recorded on the stream in every pass: before and after
// the input copy, before and after the result copy. After the sync, cudaEventElapsedTime turns them
// into last_timing(). Inside a stream capture a plain cudaEventRecord is not an event-record node:
// it only marks a fork/join point between streams (CUDA programming guide, "Cross-stream
// dependencies and events"), and after a replay the event still holds the record of the direct run.
// So the capture records them with cudaEventRecordExternal, which makes each an event-record node
// that re-records the event at every launch of the graph; the flag is meant for captures only, so
// direct runs use plain records. Either way the split covers graphed and direct passes. The first
// call of a graphed pass reads its timing after its direct run, before the capture re-records them.
//
// CUDA graphs: the first call of a pass (batch size, layer count, k) runs it directly, then
// captures it (cudaStreamCaptureModeThreadLocal) and instantiates the graph; later calls of that
// pass replay it with cudaGraphLaunch. Running first matters: cuDNN may compile a kernel or
// allocate on its first call for a shape, which stream capture forbids. set_batch() runs before
// the capture: each cuDNN call reads its descriptors when it is made and bakes their values into
// the kernels it enqueues, so a graph keeps the batch size it was captured with, whatever the
// descriptors say later. The addresses baked in (buffers, pinned staging, workspace) live as long
// as the executor, except the workspace's when a batch size's first pass grows it
// (prepare_batch_size), which drops every graph captured before. A capture or instantiation that fails is ended
// cleanly, logged, and that pass runs its calls directly from then on.
#include <algorithm>
#include <cstring>
#include <exception>

#include "backends/cudnn/device.h"
#include "backends/cudnn/executor.h"

namespace infer::cudnn {

void Executor::execute(const Pass& pass, const float* input) {
  if (!broken_.empty()) {
    throw GpuError("the CUDA context is unusable after " + broken_ +
                   "; restart the process (or use the CPU backend) to run more batches");
  }
  plan_.set_batch(pass.n);  // before any capture: the calls bake the descriptors' values in
  const std::size_t in_bytes = static_cast<std::size_t>(pass.n) * plan_.network().input().dims.size() * sizeof(float);
  std::memcpy(input_staging_.floats(), input, in_bytes);
  bool timing_read = false;
  try {
    prepare_batch_size(pass.n);  // a batch size's first pass may grow the workspace: also before any capture
    if (options_.cuda_graphs) {
      timing_read = replay(pass);
    } else {
      enqueue(pass, false);
    }
    INFER_CUDA_CHECK("forward pass", cudaStreamSynchronize(stream_.get()));
  } catch (...) {
    // Work queued before the failure may still read the pinned staging buffer: let it finish
    // before the next call overwrites it (the error already thrown is the one reported). Then clear
    // the runtime's last error, so that the next pass's launch checks see their own errors only.
    // An error that leaves the context unusable cannot be cleared: remember it, so that later
    // calls say so instead of failing at some unrelated call.
    last_timing_.reset();
    const cudaError_t synced = cudaStreamSynchronize(stream_.get());
    const cudaError_t last = cudaGetLastError();
    for (const cudaError_t e : {synced, last}) {
      if (broken_.empty() && leaves_context_unusable(e)) {
        broken_ = std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
      }
    }
    throw;
  }
  if (!timing_read) read_timing();
}

// Every event of the pass has completed (the stream was synchronised). A failure here loses the
// timing, not the results: last_timing_ stays empty, and the first failure is logged.
void Executor::read_timing() {
  const std::pair<cudaEvent_t, cudaEvent_t> spans[] = {{h2d_start_.get(), h2d_end_.get()},
                                                       {h2d_end_.get(), d2h_start_.get()},
                                                       {d2h_start_.get(), d2h_end_.get()},
                                                       {h2d_start_.get(), d2h_end_.get()}};
  double ms[4] = {};
  for (std::size_t i = 0; i < 4; ++i) {
    float elapsed = 0.0f;
    const cudaError_t status = cudaEventElapsedTime(&elapsed, spans[i].first, spans[i].second);
    if (status != cudaSuccess) {
      static_cast<void>(cudaGetLastError());  // not sticky: the next pass must not see it
      if (!timing_failure_logged_) {
        timing_failure_logged_ = true;
        log(std::string("device timing unavailable: cudaEventElapsedTime failed: ") + cudaGetErrorName(status) + " (" +
            cudaGetErrorString(status) + ")");
      }
      return;
    }
    ms[i] = elapsed;
  }
  last_timing_ = BatchTiming{ms[0], ms[1], ms[2], ms[3]};
}

bool Executor::replay(const Pass& pass) {
  auto it = graphs_.find(pass);
  if (it == graphs_.end()) {
    // First call of this pass: run it directly (the results), then capture it for the next calls.
    // Its timing is read before the capture, which re-records the events as graph nodes.
    enqueue(pass, false);
    INFER_CUDA_CHECK("forward pass", cudaStreamSynchronize(stream_.get()));
    read_timing();
    if (graphs_.size() >= kMaxGraphs) {
      const auto oldest = std::min_element(graphs_.begin(), graphs_.end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      });
      graphs_.erase(oldest);
    }
    GraphEntry entry = capture(pass);
    entry.last_use = ++graph_clock_;
    graphs_.emplace(pass, std::move(entry));
    return true;
  }
  it->second.last_use = ++graph_clock_;
  if (it->second.direct) {
    enqueue(pass, false);
    return false;
  }
  INFER_CUDA_CHECK("CUDA graph", cudaGraphLaunch(it->second.exec.get(), stream_.get()));
  return false;
}

Executor::GraphEntry Executor::capture(const Pass& pass) {
  const std::string what = "n = " + std::to_string(pass.n) + ", " + std::to_string(pass.layer_count) + " layers" +
                           (pass.k > 0 ? ", top-" + std::to_string(pass.k) : std::string());
  GraphEntry entry;
  cudaStream_t stream = stream_.get();
  std::string why;
  cudaError_t status = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (status != cudaSuccess) {
    why = std::string("cudaStreamBeginCapture: ") + cudaGetErrorName(status);
  } else {
    try {
      enqueue(pass, true);
    } catch (const std::exception& e) {
      why = e.what();
    }
    cudaGraph_t raw = nullptr;
    status = cudaStreamEndCapture(stream, &raw);  // ends the capture even when it was invalidated
    const Graph graph(raw);
    if (why.empty() && status != cudaSuccess) why = std::string("cudaStreamEndCapture: ") + cudaGetErrorName(status);
    if (why.empty()) {
      cudaGraphExec_t exec = nullptr;
      status = cudaGraphInstantiate(&exec, graph.get(), 0);
      if (status == cudaSuccess) {
        entry.exec = GraphExec(exec);
      } else {
        why = std::string("cudaGraphInstantiate: ") + cudaGetErrorName(status);
      }
    }
  }
  if (!why.empty()) {
    // Capture errors are not sticky: clear the runtime's and cuDNN's last error and go on without.
    static_cast<void>(cudaGetLastError());
    char discard[256];
    cudnnGetLastErrorString(discard, sizeof discard);
    entry.direct = true;
    log("CUDA graph for " + what + " not used (" + detail::one_line(why) + "); its calls run directly");
  } else {
    log("CUDA graph captured for " + what);
  }
  return entry;
}

// The float NCHW values of an activation on the device: its own buffer, or (half) converted into
// output_float_.
DeviceIn Executor::float_output(std::size_t activation, int n) {
  const Activation& a = plan_.activations()[activation];
  if (a.type == CUDNN_DATA_FLOAT) return in(activation);
  const std::string context =
      activation == 0 ? std::string("network input") : layer_context(plan_.network().layers()[activation - 1]);
  INFER_KERNEL_CHECK(context, convert_half_nhwc_to_float_nchw(kernels_, in(activation), output_float_.out(), n,
                                                              a.dims.c, a.dims.h, a.dims.w, stream_.get()));
  return output_float_.in();
}

void Executor::record(cudaEvent_t event, bool capturing) {
  const unsigned int flags = capturing ? cudaEventRecordExternal : cudaEventRecordDefault;
  INFER_CUDA_CHECK("timing event", cudaEventRecordWithFlags(event, stream_.get(), flags));
}

void Executor::enqueue(const Pass& pass, bool capturing) {
  const std::vector<Layer>& layers = plan_.network().layers();
  const std::vector<Step>& steps = plan_.steps();
  // A top-k pass over a network that ends in a class softmax runs that step in the selection's kernel.
  const bool fused_softmax = pass.k > 0 && pass.layer_count == layers.size() && plan_.ends_in_class_softmax();
  cudaStream_t stream = stream_.get();
  const Dims& in = plan_.network().input().dims;
  const std::size_t in_bytes = static_cast<std::size_t>(pass.n) * in.size() * sizeof(float);
  record(h2d_start_.get(), capturing);
  if (plan_.storage_type() == CUDNN_DATA_FLOAT) {
    INFER_CUDA_CHECK("network input", copy_to_device(out(0), input_staging_.get(), in_bytes, stream));
    record(h2d_end_.get(), capturing);
  } else {
    INFER_CUDA_CHECK("network input", copy_to_device(input_float_.out(), input_staging_.get(), in_bytes, stream));
    record(h2d_end_.get(), capturing);  // the conversion below is compute
    INFER_KERNEL_CHECK("network input", convert_float_nchw_to_half_nhwc(kernels_, input_float_.in(), out(0), pass.n,
                                                                        in.c, in.h, in.w, stream));
  }
  const std::size_t step_count = fused_softmax ? steps.size() - 1 : steps.size();
  for (std::size_t i = 0; i < step_count; ++i) {
    if (steps[i].first_layer >= pass.layer_count) break;
    run_step(i, pass.layer_count, capturing);
  }
  const Layer& last = layers[pass.layer_count - 1];
  const int classes = static_cast<int>(last.out.size());
  if (fused_softmax) {
    const std::size_t logits = steps.back().inputs[0];
    INFER_KERNEL_CHECK(
        layer_context(last),
        select_softmax_top_k(kernels_, Executor::in(logits), plan_.activations()[logits].type == CUDNN_DATA_HALF,
                             pass.n, classes, pass.k, top_classes_.out(), top_scores_.out(), stream));
    copy_top_k(pass, capturing);
    return;
  }
  const DeviceIn result = float_output(pass.layer_count, pass.n);
  if (pass.k == 0) {
    const std::size_t out_bytes = static_cast<std::size_t>(pass.n) * last.out.size() * sizeof(float);
    record(d2h_start_.get(), capturing);
    INFER_CUDA_CHECK(layer_context(last), copy_to_host(output_staging_.get(), result, out_bytes, stream));
    record(d2h_end_.get(), capturing);
    return;
  }
  INFER_KERNEL_CHECK(layer_context(last), select_top_k(kernels_, result, pass.n, classes, pass.k, top_classes_.out(),
                                                       top_scores_.out(), stream));
  copy_top_k(pass, capturing);
}

void Executor::copy_top_k(const Pass& pass, bool capturing) {
  const std::size_t count = static_cast<std::size_t>(pass.n) * static_cast<std::size_t>(pass.k);
  unsigned char* staging = static_cast<unsigned char*>(top_staging_.get());
  const std::size_t scores_at = plan_.max_batch() * plan_.network().output_dims().size() * sizeof(int);
  record(d2h_start_.get(), capturing);
  INFER_CUDA_CHECK("top-k", copy_to_host(staging, top_classes_.in(), count * sizeof(int), stream_.get()));
  INFER_CUDA_CHECK("top-k", copy_to_host(staging + scores_at, top_scores_.in(), count * sizeof(float), stream_.get()));
  record(d2h_end_.get(), capturing);
}

}  // namespace infer::cudnn

// Streams, events, stream capture and graphs of the stand-in's CUDA runtime (see device.h).
//
// A stream is a queue that runs when something waits for it. Capture (cudaStreamBeginCapture)
// redirects the stream's work into a graph; cudaGraphInstantiate copies the graph's nodes, and
// cudaGraphLaunch puts them on a stream's queue again. Calls the runtime forbids during a capture in
// cudaStreamCaptureModeGlobal (any thread) or ThreadLocal (the capturing thread) -- allocation,
// synchronisation, querying the capturing stream -- return cudaErrorStreamCaptureUnsupported and
// invalidate the capture, so that cudaStreamEndCapture returns cudaErrorStreamCaptureInvalidated
// (CUDA runtime API, cudaStreamBeginCapture and cudaThreadExchangeStreamCaptureMode).
//
// Events: a record outside a capture is an op that stamps the time when it runs. Inside a capture, a
// record with cudaEventRecordExternal becomes such an op in the graph; a plain record only marks a
// point for cross-stream dependencies (CUDA programming guide, "Cross-stream dependencies and
// events") and leaves the event's last time stamp as it was.
#include <algorithm>

#include "tests/standin/call_count.h"
#include "tests/standin/state.h"

namespace standin {
namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

struct Event {
  unsigned flags = 0;
  bool recorded = false;   // at least one record has completed
  int pending = 0;         // records queued and not yet run
  Clock::time_point time;  // of the last completed record
};

struct GraphExec {
  std::vector<Op> nodes;
};

struct Objects {
  Stream legacy;
  std::map<cudaStream_t, std::unique_ptr<Stream>> streams;
  std::map<cudaEvent_t, std::unique_ptr<Event>> events;
  std::map<cudaGraph_t, std::unique_ptr<Graph>> graphs;
  std::map<cudaGraphExec_t, std::unique_ptr<GraphExec>> execs;
};

Objects& objects() {
  static Objects* o = new Objects;
  return *o;
}

Event* find_event(cudaEvent_t e) {
  auto& m = objects().events;
  auto it = m.find(e);
  return it == m.end() ? nullptr : it->second.get();
}

void run(Op& op) {
  for (const Range& r : op.ranges) require_device(op.call.c_str(), r);  // freed since it was queued?
  op.work();
}

// Puts op on a stream: into its capture's graph, or onto its queue.
cudaError_t put(Stream& s, Op op) {
  if (s.capture) {
    if (!s.capture->invalidated_by.empty()) return cudaErrorStreamCaptureInvalidated;
    s.capture->graph->nodes.push_back(std::move(op));
    return cudaSuccess;
  }
  if (op.on_queue) op.on_queue();
  s.queue.push_back(std::move(op));
  if (&s == &objects().legacy) drain_all();  // the legacy stream: runs in order with everything before it
  return cudaSuccess;
}

}  // namespace

Stream* find_stream(cudaStream_t handle) {
  Objects& o = objects();
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread) return &o.legacy;
  auto it = o.streams.find(handle);
  return it == o.streams.end() ? nullptr : it->second.get();
}

void drain(Stream& s) {
  while (!s.queue.empty()) {
    Op op = std::move(s.queue.front());
    s.queue.pop_front();
    run(op);
  }
}

void drain_all() {
  Objects& o = objects();
  drain(o.legacy);
  for (auto& [handle, s] : o.streams) drain(*s);
}

bool unsafe_during_capture(const char* call) {
  bool any = false;
  const std::thread::id me = std::this_thread::get_id();
  for (auto& [handle, s] : objects().streams) {
    Capture* c = s->capture.get();
    if (!c) continue;
    if (c->mode == cudaStreamCaptureModeGlobal || (c->mode == cudaStreamCaptureModeThreadLocal && c->thread == me)) {
      if (c->invalidated_by.empty()) c->invalidated_by = call;
      any = true;
    }
  }
  return any;
}

}  // namespace detail

int enqueue(void* stream, const char* call, std::vector<Range> ranges, std::function<void()> work) {
  const detail::Guard guard(detail::big_lock());
  detail::Stream* s = detail::find_stream(static_cast<cudaStream_t>(stream));
  if (!s) return cudaErrorInvalidResourceHandle;
  for (const Range& r : ranges) require_device(call, r);
  return detail::put(*s, detail::Op{call, std::move(ranges), std::move(work), {}});
}

bool capturing(void* stream) {
  const detail::Guard guard(detail::big_lock());
  detail::Stream* s = detail::find_stream(static_cast<cudaStream_t>(stream));
  return s && s->capture;
}

int synchronize(void* stream) {
  const detail::Guard guard(detail::big_lock());
  detail::Stream* s = detail::find_stream(static_cast<cudaStream_t>(stream));
  if (!s) return cudaErrorInvalidResourceHandle;
  if (s->capture) {
    if (s->capture->invalidated_by.empty()) s->capture->invalidated_by = "a synchronisation of the capturing stream";
    return cudaErrorStreamCaptureUnsupported;
  }
  if (detail::unsafe_during_capture("a synchronisation")) return cudaErrorStreamCaptureUnsupported;
  detail::drain(*s);
  return cudaSuccess;
}

}  // namespace standin

using namespace standin::detail;
using standin::detail::Guard;

extern "C" {

// --- streams --------------------------------------------------------------------------------------

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  if (!stream || (flags & ~static_cast<unsigned>(cudaStreamNonBlocking)) != 0) return record(cudaErrorInvalidValue);
  auto s = std::make_unique<Stream>();
  s->flags = flags;
  const auto handle = reinterpret_cast<cudaStream_t>(s.get());
  objects().streams[handle] = std::move(s);
  *stream = handle;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  STANDIN_COUNT_CALL();
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  auto& m = objects().streams;
  auto it = m.find(stream);
  if (it == m.end()) return record(cudaErrorInvalidResourceHandle);
  if (it->second->capture) return record(cudaErrorStreamCaptureUnsupported);
  drain(*it->second);  // work already queued completes (the runtime releases the stream afterwards)
  m.erase(it);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  STANDIN_COUNT_CALL();
  return record(static_cast<cudaError_t>(standin::synchronize(stream)));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Stream* s = find_stream(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (s->capture || unsafe_during_capture("cudaStreamQuery")) {
    if (s->capture && s->capture->invalidated_by.empty()) s->capture->invalidated_by = "cudaStreamQuery";
    return record(cudaErrorStreamCaptureUnsupported);
  }
  return s->queue.empty() ? cudaSuccess : cudaErrorNotReady;  // not recorded: not an error
}

cudaError_t cudaDeviceSynchronize(void) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  if (unsafe_during_capture("cudaDeviceSynchronize")) return record(cudaErrorStreamCaptureUnsupported);
  drain_all();
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Stream* s = find_stream(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (s == &objects().legacy) return record(cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot be captured
  if (s->capture) return record(cudaErrorIllegalState);
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed) {
    return record(cudaErrorInvalidValue);
  }
  s->capture = std::make_unique<Capture>();
  s->capture->mode = mode;
  s->capture->thread = std::this_thread::get_id();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Stream* s = find_stream(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (!graph) return record(cudaErrorInvalidValue);
  if (!s->capture) return record(cudaErrorIllegalState);
  if (s->capture->mode != cudaStreamCaptureModeRelaxed && s->capture->thread != std::this_thread::get_id()) {
    return record(cudaErrorStreamCaptureWrongThread);
  }
  std::unique_ptr<Capture> c = std::move(s->capture);
  *graph = nullptr;
  if (!c->invalidated_by.empty()) return record(cudaErrorStreamCaptureInvalidated);
  const auto handle = reinterpret_cast<cudaGraph_t>(c->graph.get());
  objects().graphs[handle] = std::move(c->graph);
  *graph = handle;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Stream* s = find_stream(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (!status) return record(cudaErrorInvalidValue);
  *status = !s->capture                          ? cudaStreamCaptureStatusNone
            : s->capture->invalidated_by.empty() ? cudaStreamCaptureStatusActive
                                                 : cudaStreamCaptureStatusInvalidated;
  return cudaSuccess;
}

// --- graphs ---------------------------------------------------------------------------------------

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  auto it = objects().graphs.find(graph);
  if (!exec || it == objects().graphs.end()) return record(cudaErrorInvalidValue);
  if (flags != 0) return record(cudaErrorInvalidValue);  // the stand-in supports the default only
  auto e = std::make_unique<GraphExec>();
  e->nodes = it->second->nodes;  // an instantiation does not change with its graph
  const auto handle = reinterpret_cast<cudaGraphExec_t>(e.get());
  objects().execs[handle] = std::move(e);
  *exec = handle;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  auto it = objects().execs.find(exec);
  if (it == objects().execs.end()) return record(cudaErrorInvalidResourceHandle);
  Stream* s = find_stream(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  for (const Op& node : it->second->nodes) {
    for (const standin::Range& r : node.ranges) standin::require_device("cudaGraphLaunch", r);
    if (const cudaError_t e = put(*s, node); e != cudaSuccess) return record(e);
  }
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  return objects().graphs.erase(graph) ? cudaSuccess : record(cudaErrorInvalidValue);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  return objects().execs.erase(exec) ? cudaSuccess : record(cudaErrorInvalidValue);
}

// --- events ---------------------------------------------------------------------------------------

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
  if (!event || (flags & ~known) != 0) return record(cudaErrorInvalidValue);
  auto e = std::make_unique<Event>();
  e->flags = flags;
  const auto handle = reinterpret_cast<cudaEvent_t>(e.get());
  objects().events[handle] = std::move(e);
  *event = handle;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  STANDIN_COUNT_CALL();
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Event* e = find_event(event);
  if (!e) return record(cudaErrorInvalidResourceHandle);
  if (e->pending > 0) drain_all();  // queued records still stamp it; then it goes
  objects().events.erase(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Event* e = find_event(event);
  if (!e) return record(cudaErrorInvalidResourceHandle);
  if ((flags & ~static_cast<unsigned>(cudaEventRecordExternal)) != 0) return record(cudaErrorInvalidValue);
  Stream* s = find_stream(stream);
  if (!s) return record(cudaErrorInvalidResourceHandle);
  if (s->capture && (flags & cudaEventRecordExternal) == 0) return cudaSuccess;  // a capture-internal marker
  Op op{"cudaEventRecord",
        {},
        [event] {
          Event* ev = find_event(event);
          if (!ev) return;  // destroyed while a graph still held the node: nothing to stamp
          ev->time = Clock::now();
          ev->recorded = true;
          --ev->pending;
        },
        [event] {
          if (Event* ev = find_event(event)) ++ev->pending;
        }};
  return record(put(*s, std::move(op)));
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  STANDIN_COUNT_CALL();
  return cudaEventRecordWithFlags(event, stream, cudaEventRecordDefault);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Event* e = find_event(event);
  if (!e) return record(cudaErrorInvalidResourceHandle);
  if (unsafe_during_capture("cudaEventSynchronize")) return record(cudaErrorStreamCaptureUnsupported);
  if (e->pending > 0) drain_all();
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Event* e = find_event(event);
  if (!e) return record(cudaErrorInvalidResourceHandle);
  return e->pending > 0 ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  STANDIN_COUNT_CALL();
  const Guard guard(big_lock());
  Event* a = find_event(start);
  Event* b = find_event(end);
  if (!ms) return record(cudaErrorInvalidValue);
  if (!a || !b) return record(cudaErrorInvalidResourceHandle);
  // Documented: events made with cudaEventDisableTiming, or never recorded, are invalid handles here;
  // one whose last record has not completed is cudaErrorNotReady.
  if ((a->flags | b->flags) & cudaEventDisableTiming) return record(cudaErrorInvalidResourceHandle);
  if (a->pending > 0 || b->pending > 0) return record(cudaErrorNotReady);
  if (!a->recorded || !b->recorded) return record(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(b->time - a->time).count();
  return cudaSuccess;
}

}  // extern "C"

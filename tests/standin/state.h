// Private state of the stand-in's libcudart.so.13 (see device.h): the allocation registry, the
// streams with their queues and captures, and the runtime's error state. One recursive lock guards
// all of it; work taken off a queue runs under it too, so that cuDNN's enqueued closures and the
// registry never race.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/standin/device.h"

namespace standin::detail {

std::recursive_mutex& big_lock();
using Guard = std::lock_guard<std::recursive_mutex>;

// --- memory (memory.cpp) -------------------------------------------------------------------------
enum class MemoryKind { Device, Pinned };
// The live allocation containing p, or nullptr. `start` and `bytes` describe it.
struct Allocation {
  std::uintptr_t start = 0;
  std::size_t bytes = 0;
  MemoryKind kind = MemoryKind::Device;
};
const Allocation* find_allocation(const void* p);
void* allocate(std::size_t bytes, MemoryKind kind);
// False when p is not the start of a live allocation of that kind.
bool release(void* p, MemoryKind kind);
// Where a pointer outside device memory points, for messages: "a host pointer", "pinned host
// memory (cudaMallocHost)", "freed device memory (cudaFree)".
std::string describe_pointer(const void* p);

// --- errors (runtime_api.cpp) --------------------------------------------------------------------
// Records e as the calling thread's last error (cudaGetLastError) unless it is cudaSuccess, and
// returns it: every entry point returns through this.
cudaError_t record(cudaError_t e);

// --- streams, events, graphs (streams.cpp) -------------------------------------------------------
struct Op {
  std::string call;
  std::vector<Range> ranges;
  std::function<void()> work;
  std::function<void()> on_queue;  // optional: runs when the op is put on a stream's queue
};

struct Graph {
  std::vector<Op> nodes;
};

struct Capture {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  std::string invalidated_by;  // non-empty: an illegal call invalidated the capture
};

struct Stream {
  unsigned flags = 0;
  std::deque<Op> queue;
  std::unique_ptr<Capture> capture;
};

// The stream a handle names, or nullptr for a handle that is not a live stream. The legacy default
// stream (nullptr handle) is a stream too.
Stream* find_stream(cudaStream_t handle);
// Runs every queued op of every stream (cudaDeviceSynchronize, cudaFree's implicit sync).
void drain_all();
// Runs the queue of one stream.
void drain(Stream& stream);
// A call that is illegal while a capture of mode Global (any thread) or ThreadLocal (this thread) is
// under way: invalidates those captures and returns true (the caller returns
// cudaErrorStreamCaptureUnsupported), as the runtime does for "potentially unsafe API calls".
bool unsafe_during_capture(const char* call);

}  // namespace standin::detail

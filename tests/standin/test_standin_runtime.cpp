// The stand-in's CUDA runtime against the runtime's documented contract: deferred stream execution,
// stream capture and its illegal calls, graph replay, event timing, and the pointer checks that end
// the process (death tests). Links the stand-in directly (RUNPATH to its folder), not NVIDIA's.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

struct StreamOwner {
  cudaStream_t s = nullptr;
  StreamOwner() { EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess); }
  ~StreamOwner() { cudaStreamDestroy(s); }
};

TEST(StandinRuntime, NamesItselfAndHasOneDevice) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 1);
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_NE(std::strstr(p.name, "stand-in"), nullptr) << p.name;
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "cudaGetLastError resets the last error";
}

TEST(StandinRuntime, NewDeviceMemoryIsNotZero) {
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 4 * sizeof(float)), cudaSuccess);
  float host[4] = {};
  ASSERT_EQ(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost), cudaSuccess);
  for (float v : host) EXPECT_TRUE(std::isnan(v)) << "uninitialised memory must not read as zeros";
  cudaFree(d);
}

// Work runs when the stream is synchronised: a copy into pinned memory is not there before.
TEST(StandinRuntime, StreamWorkRunsInOrderAtSynchronisation) {
  StreamOwner s;
  void* d = nullptr;
  float* pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), 16), cudaSuccess);
  std::fill(pinned, pinned + 4, 1.0f);
  ASSERT_EQ(cudaMemsetAsync(d, 0, 16, s.s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(pinned, d, 16, cudaMemcpyDeviceToHost, s.s), cudaSuccess);
  EXPECT_EQ(pinned[0], 1.0f) << "the copy ran before the host waited for it";
  EXPECT_EQ(cudaStreamQuery(s.s), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  EXPECT_EQ(pinned[0], 0.0f);
  EXPECT_EQ(cudaStreamQuery(s.s), cudaSuccess);
  cudaFreeHost(pinned);
  cudaFree(d);
}

TEST(StandinRuntime, CaptureRefusesAllocationAndSyncAndIsInvalidated) {
  StreamOwner s;
  void* d = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&d, 16), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(1);
  EXPECT_EQ(cudaStreamEndCapture(s.s, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);

  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s.s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s.s, &g), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported)
      << "the legacy stream cannot be captured";
  (void)cudaGetLastError();
}

// A captured graph replays its work at every launch, reading the pinned buffer as it is then.
TEST(StandinRuntime, GraphReplaysCapturedCopies) {
  StreamOwner s;
  void* d = nullptr;
  float *in = nullptr, *out = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 8), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&in), 8), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&out), 8), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(d, in, 8, cudaMemcpyHostToDevice, s.s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(out, d, 8, cudaMemcpyDeviceToHost, s.s), cudaSuccess);
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s.s, &g), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(g), cudaSuccess);  // the instantiation stands alone
  for (float v : {3.5f, -7.25f}) {
    in[0] = in[1] = v;
    ASSERT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
    EXPECT_EQ(out[0], v);
    EXPECT_EQ(out[1], v);
  }
  // Pageable memory in a capture is refused (the stand-in is stricter than the runtime here).
  std::vector<float> pageable(2);
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(d, pageable.data(), 8, cudaMemcpyHostToDevice, s.s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s.s, &g), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();
  cudaGraphExecDestroy(exec);
  cudaFreeHost(in);
  cudaFreeHost(out);
  cudaFree(d);
}

// Plain records inside a capture are markers; external records are nodes that re-stamp the event.
TEST(StandinRuntime, EventTimingOutsideAndInsideGraphs) {
  StreamOwner s;
  cudaEvent_t a = nullptr, b = nullptr, untimed = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&a, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&b, cudaEventDefault), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
  float ms = -1.0f;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle) << "never recorded";
  ASSERT_EQ(cudaEventRecord(a, s.s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(b, s.s), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  ASSERT_EQ(cudaEventRecord(untimed, s.s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, untimed), cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();

  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaEventRecordWithFlags(a, s.s, cudaEventRecordExternal), cudaSuccess);
  ASSERT_EQ(cudaEventRecordWithFlags(b, s.s, cudaEventRecordDefault), cudaSuccess);  // a marker only
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s.s, &g), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_LT(ms, 0.0f) << "a was re-stamped by the graph, b kept its earlier time";
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  for (cudaEvent_t e : {a, b, untimed}) cudaEventDestroy(e);
}

using StandinRuntimeDeathTest = ::testing::Test;

TEST_F(StandinRuntimeDeathTest, HostPointerWhereDeviceMemoryBelongs) {
  std::vector<char> host(16);
  EXPECT_DEATH(cudaMemsetAsync(host.data(), 0, 16, nullptr), "cudaMemsetAsync: argument 'devPtr' is not device memory: a host pointer");
}

TEST_F(StandinRuntimeDeathTest, OutOfBoundsNamesTheArgumentAndTheOverrun) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 100), cudaSuccess);
  std::vector<char> host(128);
  EXPECT_DEATH(cudaMemcpyAsync(d, host.data(), 101, cudaMemcpyHostToDevice, nullptr),
               "cudaMemcpyAsync: argument 'dst' out of bounds: 101 bytes from offset 0 of a 100-byte allocation \\(1 bytes past its end\\)");
  cudaFree(d);
}

TEST_F(StandinRuntimeDeathTest, UseAfterFreeInAGraphReplay) {
  EXPECT_DEATH(
      {
        cudaStream_t s = nullptr;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        void* d = nullptr;
        cudaMalloc(&d, 64);
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        cudaMemsetAsync(d, 0, 64, s);
        cudaGraph_t g = nullptr;
        cudaStreamEndCapture(s, &g);
        cudaGraphExec_t exec = nullptr;
        cudaGraphInstantiate(&exec, g, 0);
        cudaFree(d);
        cudaGraphLaunch(exec, s);
      },
      "argument 'devPtr' is not device memory: freed device memory \\(use after free\\)");
}

TEST_F(StandinRuntimeDeathTest, DoubleFree) {
  EXPECT_DEATH(
      {
        void* d = nullptr;
        cudaMalloc(&d, 8);
        cudaFree(d);
        cudaFree(d);
      },
      "cudaFree: argument 'devPtr' is not the start of a live cudaMalloc allocation");
}

}  // namespace

// The stand-in's CUDA runtime against the runtime's documented contract: deferred stream execution,
// stream capture and its illegal calls, graph replay, event timing, the host implementation of the
// project's pointwise kernel (registered here as nvcc's host code registers it), and the pointer
// checks that end the process (death tests). Links the stand-in directly (RUNPATH to its folder),
// not NVIDIA's.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "tests/standin/half.h"
#include "tests/support/pointwise_reference.h"

// Declared by CUDA's crt/host_runtime.h for nvcc's generated host code, which registers each
// __global__ function of a module under its mangled device name.
extern "C" void __cudaRegisterFunction(void** module, const char* host_fun, char* device_fun, const char* device_name,
                                       int thread_limit, uint3* tid, uint3* bid, dim3* block, dim3* grid,
                                       int* warp_size);

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

// --- the project's pointwise kernel (backends/cudnn/pointwise.h) ------------------------------------

// What nvcc registers for infer::cudnn::(anonymous)::pointwise_kernel(int, float, float, const void*,
// void*, size_t, int) (the anonymous namespace's name carries a per-file hash; the stand-in matches
// the name's end). The host "stub" is any unique address, as nvcc's stub function is (objects that
// can be written, so that no two are merged).
char pointwise_stub = 0;
char mismatched_stub = 0;

const void* registered(const char* stub, const char* device_name) {
  std::string name(device_name);
  __cudaRegisterFunction(nullptr, stub, name.data(), name.c_str(), -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  return stub;
}

const void* pointwise_kernel() {
  static const void* k =
      registered(&pointwise_stub, "_ZN5infer5cudnn36_GLOBAL__N__1e27ced5_4_k_cu_fcd4ac9f16pointwise_kernelEiffPKvPvmi");
  return k;
}

cudaError_t launch_pointwise(const void* kernel, dim3 grid, dim3 block, int op, float a, float b, const void* x,
                             void* y, std::size_t count, int half) {
  void* args[] = {&op, &a, &b, &x, &y, &count, &half};
  return cudaLaunchKernel(kernel, grid, block, args, 0, nullptr);
}

cudaError_t launch_pointwise(int op, float a, float b, const void* x, void* y, std::size_t count, int half) {
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((count + 255) / 256, 2));  // grid-stride: 2 suffice
  return launch_pointwise(pointwise_kernel(), dim3(std::max(blocks, 1u)), dim3(256), op, a, b, x, y, count, half);
}

// Every pointwise op with the parameters the tests give it (pointwise_reference.h), against the
// tests' double-precision definition of the op, within the float formula's derived rounding: the
// stand-in runs our kernel's own code (graph/pointwise_formula.h in float), not a double model of it.
struct PointwiseCase {
  int op;
  float a, b;
  std::string name;
};
std::vector<PointwiseCase> pointwise_cases() {
  std::vector<PointwiseCase> cases;
  for (std::size_t i = 0; i < infer::kPointwiseCount; ++i) {
    const auto op = static_cast<infer::PointwiseOp>(i);
    const infer::PointwiseAttrs p = infer::test::pointwise_sample(op);
    cases.push_back({static_cast<int>(i), p.a, p.b, std::string(infer::op_name(infer::layer_kind(op)))});
  }
  return cases;
}

double pointwise_reference(int op, double a, double b, double x) {
  return infer::test::pointwise_reference(static_cast<infer::PointwiseOp>(op),
                                          {static_cast<float>(a), static_cast<float>(b)})
      .value(x);
}

// How far the kernel's float formula (graph/pointwise_formula.h, which the stand-in runs now: our
// device code) may be from the double definition at x: the formula's own rounding, the bound
// pointwise_reference.h derives (expf within 2 ulp, each operation rounded once).
double pointwise_rounding(int op, double a, double b, double x) {
  const infer::test::PointwiseReference ref = infer::test::pointwise_reference(
      static_cast<infer::PointwiseOp>(op), {static_cast<float>(a), static_cast<float>(b)});
  return ref.rounding(std::fabs(x), std::fabs(ref.value(x)));
}

// Fresh random x in [-8, 8] (with a NaN, both zeros and a value beyond each clamp), 1000 floats over
// 2 blocks of 256 (a grid-stride loop covers the rest); y starts as a sentinel so that every element
// is seen written.
TEST(StandinKernels, PointwiseFloatMatchesItsContract) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  const std::size_t count = 1000;
  std::vector<float> x(count);
  for (float& v : x) v = value(rng);
  x[0] = std::numeric_limits<float>::quiet_NaN();
  x[1] = 0.0f;
  x[2] = -0.0f;
  x[3] = 30.0f;
  x[4] = -30.0f;
  void *dx = nullptr, *dy = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, count * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, count * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), count * 4, cudaMemcpyHostToDevice), cudaSuccess);
  const std::vector<float> sentinel(count, 12345.0f);
  for (const PointwiseCase& k : pointwise_cases()) {
    ASSERT_EQ(cudaMemcpy(dy, sentinel.data(), count * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(launch_pointwise(k.op, k.a, k.b, dx, dy, count, 0), cudaSuccess) << k.name;
    std::vector<float> y(count);
    ASSERT_EQ(cudaMemcpy(y.data(), dy, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < count; ++i) {
      const double want = pointwise_reference(k.op, k.a, k.b, static_cast<double>(x[i]));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(y[i])) << k.name << "(" << x[i] << ") = " << y[i] << ", want NaN";
      } else {
        EXPECT_LE(std::fabs(static_cast<double>(y[i]) - want), pointwise_rounding(k.op, k.a, k.b, x[i]))
            << k.name << "(" << x[i] << ") = " << y[i] << ", want " << want << " [" << i << "]";
      }
    }
  }
  cudaFree(dx);
  cudaFree(dy);
}

// By hand: sigmoid(0) = 1/2, sigmoid(ln 3) = 1 / (1 + 1/3) = 3/4, silu(ln 3) = 3/4 ln 3; clip to
// [-1, 2]; hardsigmoid and hardswish with a = 1/4, b = 1/2: 1/4 + 1/2 = 3/4 at x = 1, clamped to 1
// at x = 4 (hardswish 4) and to 0 at x = -4 (hardswish -4 * 0 = -0).
TEST(StandinKernels, PointwiseHandComputedValues) {
  const float ln3 = std::log(3.0f), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {0.0f, ln3, -3.0f, 0.5f, 5.0f, 1.0f, 4.0f, -4.0f, nan};
  void *dx = nullptr, *dy = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, x.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dy, x.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  auto run = [&](infer::PointwiseOp op, float a, float b) {
    std::vector<float> y(x.size(), 12345.0f);
    EXPECT_EQ(cudaMemcpy(dy, y.data(), y.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(launch_pointwise(static_cast<int>(op), a, b, dx, dy, x.size(), 0), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return y;
  };
  std::vector<float> y = run(infer::PointwiseOp::Sigmoid, 0.0f, 0.0f);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_NEAR(y[1], 0.75f, 1e-7f);
  EXPECT_TRUE(std::isnan(y[8]));
  y = run(infer::PointwiseOp::Silu, 0.0f, 0.0f);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], 0.75f * ln3, 2e-7f);
  y = run(infer::PointwiseOp::Clip, -1.0f, 2.0f);
  EXPECT_EQ(y[2], -1.0f);
  EXPECT_EQ(y[3], 0.5f);
  EXPECT_EQ(y[4], 2.0f);
  EXPECT_TRUE(std::isnan(y[8])) << "clip keeps NaN";
  y = run(infer::PointwiseOp::HardSigmoid, 0.25f, 0.5f);
  EXPECT_EQ(y[5], 0.75f);
  EXPECT_EQ(y[6], 1.0f);
  EXPECT_EQ(y[7], 0.0f);
  EXPECT_TRUE(std::isnan(y[8])) << "hardsigmoid keeps NaN";
  y = run(infer::PointwiseOp::HardSwish, 0.25f, 0.5f);
  EXPECT_EQ(y[5], 0.75f);
  EXPECT_EQ(y[6], 4.0f);
  EXPECT_EQ(y[7], 0.0f);
  EXPECT_TRUE(std::signbit(y[7])) << "-4 * 0 is -0";
  EXPECT_TRUE(std::isnan(y[8])) << "hardswish keeps NaN";
  cudaFree(dx);
  cudaFree(dy);
}

// Binary16, in place (x == y). hardsigmoid with a = 1, b = 2^-12: 1/2 + 2^-12 lies halfway between
// 0x3800 (1/2) and 0x3801 and rounds to even 0x3800; 1/2 + 2^-11 + 2^-12 rounds to even 0x3802.
// Then fresh random halves through every op, each against its definition within the float
// formula's rounding plus the store's.
TEST(StandinKernels, PointwiseHalfInPlaceRoundsToNearestEven) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4), cudaSuccess);
  const std::uint16_t ties[2] = {0x3800, 0x3801};
  ASSERT_EQ(cudaMemcpy(d, ties, 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(
      launch_pointwise(static_cast<int>(infer::PointwiseOp::HardSigmoid), 1.0f, std::ldexp(1.0f, -12), d, d, 2, 1),
      cudaSuccess);
  std::uint16_t out[2] = {};
  ASSERT_EQ(cudaMemcpy(out, d, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out[0], 0x3800);
  EXPECT_EQ(out[1], 0x3802);
  cudaFree(d);

  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  const std::size_t count = 600;
  std::vector<std::uint16_t> x(count);
  for (std::uint16_t& h : x) h = standin::half_from_float(value(rng));
  x[0] = 0x7E00;  // NaN
  ASSERT_EQ(cudaMalloc(&d, count * 2), cudaSuccess);
  for (const PointwiseCase& k : pointwise_cases()) {
    ASSERT_EQ(cudaMemcpy(d, x.data(), count * 2, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(launch_pointwise(k.op, k.a, k.b, d, d, count, 1), cudaSuccess) << k.name;
    std::vector<std::uint16_t> y(count);
    ASSERT_EQ(cudaMemcpy(y.data(), d, count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(std::isnan(standin::half_to_float(y[0]))) << k.name << "(NaN)";
    for (std::size_t i = 1; i < count; ++i) {
      // The float formula's rounding, then the store's round to half: half an ulp of half, 2^-11 of
      // the value, or 2^-25 among subnormals.
      const double in = standin::half_to_float(x[i]);
      const double want = pointwise_reference(k.op, k.a, k.b, in);
      const double bound = pointwise_rounding(k.op, k.a, k.b, in) * (1.0 + std::ldexp(1.0, -11)) +
                           std::max(std::ldexp(std::fabs(want), -11), std::ldexp(1.0, -25));
      EXPECT_LE(std::fabs(static_cast<double>(standin::half_to_float(y[i])) - want), bound)
          << k.name << "(" << in << ") = " << standin::half_to_float(y[i]) << ", want " << want << " [" << i << "]";
    }
  }
  cudaFree(d);
}

TEST(StandinKernels, PointwiseRefusesAnUnknownOpOrHalfFlag) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  const float before[4] = {1, 2, 3, 4};
  ASSERT_EQ(cudaMemcpy(d, before, 16, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(launch_pointwise(static_cast<int>(infer::kPointwiseCount), 0.0f, 0.0f, d, d, 4, 0), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(launch_pointwise(-1, 0.0f, 0.0f, d, d, 4, 0), cudaErrorInvalidValue);
  EXPECT_EQ(launch_pointwise(0, 0.0f, 0.0f, d, d, 4, 2), cudaErrorInvalidValue) << "half is 0 or 1";
  (void)cudaGetLastError();
  float after[4] = {};
  ASSERT_EQ(cudaMemcpy(after, d, 16, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(after[i], before[i]) << "a refused launch wrote y";
  cudaFree(d);
}

using StandinRuntimeDeathTest = ::testing::Test;

TEST_F(StandinRuntimeDeathTest, HostPointerWhereDeviceMemoryBelongs) {
  std::vector<char> host(16);
  EXPECT_DEATH(cudaMemsetAsync(host.data(), 0, 16, nullptr),
               "cudaMemsetAsync: argument 'devPtr' is not device memory: a host pointer");
}

TEST_F(StandinRuntimeDeathTest, OutOfBoundsNamesTheArgumentAndTheOverrun) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 100), cudaSuccess);
  std::vector<char> host(128);
  EXPECT_DEATH(cudaMemcpyAsync(d, host.data(), 101, cudaMemcpyHostToDevice, nullptr),
               "cudaMemcpyAsync: argument 'dst' out of bounds: 101 bytes from offset 0 of a 100-byte allocation \\(1 "
               "bytes past its end\\)");
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

TEST_F(StandinRuntimeDeathTest, PointwiseRefusesAnotherBlockShape) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  EXPECT_DEATH(launch_pointwise(pointwise_kernel(), dim3(1), dim3(128), 0, 0.0f, 0.0f, d, d, 4, 0),
               "pointwise_kernel: launched with block \\(128, 1, 1\\)");
  EXPECT_DEATH(launch_pointwise(pointwise_kernel(), dim3(1, 2), dim3(256), 0, 0.0f, 0.0f, d, d, 4, 0),
               "pointwise_kernel: launched with block \\(256, 1, 1\\), grid \\(1, 2, 1\\)");
  cudaFree(d);
}

// 5 halves are 10 bytes: x's 8-byte allocation is too small; 2 floats fit it, 3 do not fit y.
TEST_F(StandinRuntimeDeathTest, PointwiseChecksXAndYForTheirElementSize) {
  void *x = nullptr, *y = nullptr;
  ASSERT_EQ(cudaMalloc(&x, 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&y, 8), cudaSuccess);
  ASSERT_EQ(launch_pointwise(0, 0.0f, 0.0f, x, y, 4, 1), cudaSuccess) << "4 halves fit both";
  ASSERT_EQ(launch_pointwise(0, 0.0f, 0.0f, x, y, 2, 0), cudaSuccess) << "2 floats fit both";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_DEATH(launch_pointwise(0, 0.0f, 0.0f, x, y, 5, 1), "pointwise_kernel: argument 'x' out of bounds");
  void* big = nullptr;
  ASSERT_EQ(cudaMalloc(&big, 12), cudaSuccess);
  EXPECT_DEATH(launch_pointwise(0, 0.0f, 0.0f, big, y, 3, 0), "pointwise_kernel: argument 'y' out of bounds");
  cudaFree(big);
  cudaFree(x);
  cudaFree(y);
}

// A kernel of that name whose parameter list differs (its last parameter a float) is not run as
// the pointwise kernel: the launch ends the process naming it.
TEST_F(StandinRuntimeDeathTest, PointwiseWithAnotherSignatureIsNotRun) {
  const void* k = registered(&mismatched_stub, "_ZN5infer5cudnn12_GLOBAL__N_116pointwise_kernelEiffPKvPvmf");
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 16), cudaSuccess);
  EXPECT_DEATH(launch_pointwise(k, dim3(1), dim3(256), 0, 0.0f, 0.0f, d, d, 4, 0),
               "kernel _ZN5infer5cudnn12_GLOBAL__N_116pointwise_kernelEiffPKvPvmf is not one the stand-in runs");
  cudaFree(d);
}

}  // namespace

// The CPU backend: oneDNN's primitives by default, or the project's own plain kernels. The GPU
// backend's tests compare against it; both CPU kernel sets are compared with the double-precision
// reference of the tests (tests/support/reference.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace infer {

// Which kernels run the layers:
//   Onednn  oneDNN's JIT primitives (onednn_backend.cpp), on the layouts and ISA it picks (SSE4.1
//           to AVX-512 and AMX; ONEDNN_MAX_CPU_ISA caps it): the default, the fast path.
//   Plain   the project's own plain NCHW kernels (im2col + sgemm for convolutions and linear
//           layers; ops.h, gemm.h): simple, independent of oneDNN, a second implementation the
//           tests run every op on.
// A build without oneDNN (the Windows build: onednn_available() is false) runs the plain kernels
// for both.
enum class CpuKernels { Onednn, Plain };

struct CpuOptions {
  CpuKernels kernels = CpuKernels::Onednn;
  // oneDNN kernels: run each convolution that winograd_shape() accepts by oneDNN's Winograd
  // algorithm where this oneDNN has it (onednn_has_winograd()). false: the direct algorithm only.
  bool winograd = true;
};

// oneDNN's Winograd convolution: F(4x4, 3x3) (jit_wino_4x3: 6x6 input tiles become 4x4 output
// tiles with 36 multiplications per tile and channel pair where the direct algorithm does 144) or
// F(2x2, 3x3) (jit_fp32_wino_2x3, which oneDNN picks for one or two samples); their transforms
// round more (tests/support/winograd_bound.h derives the bound). It takes 3x3, stride-1, undilated,
// ungrouped convolutions; we give it those with input and output channels in blocks of 16 (a
// first layer with 1 or 3 channels ran slower on it).
struct Layer;
bool winograd_shape(const Layer& layer);
// Whether this process's oneDNN runs that kernel: its AVX-512 builds only (not on AVX2 or SSE4.1,
// nor under ONEDNN_MAX_CPU_ISA below AVX-512). Asked of oneDNN once.
bool onednn_has_winograd();
// oneDNN's own memory for a winograd_shape() convolution run by Winograd, for memory_plan.h: per
// program size m = 1 .. max_m (index m - 1), over the programs of 1 to m samples, the largest
// scratchpad and the bytes of each distinct layout of its transformed weights.
// Empty where this oneDNN has no Winograd.
struct WinogradMemory {
  std::uint64_t scratchpad = 0;
  std::uint64_t weights = 0;
};
std::vector<WinogradMemory> onednn_winograd_memory(const Layer& layer, int max_m);
// The scratchpad oneDNN asks of the backend for a convolution run by its direct algorithm, a linear
// layer's inner product, or a pooling, as the backend creates them (user scratchpad, layouts left
// to oneDNN where the backend leaves them; a pooling's input in each layout it may come in; without
// post-ops), for any program of 1 to max_m samples: the larger of what one sample's and max_m
// samples' primitives ask (two queries a layer, not max_m: they are part of every start-up). That
// takes oneDNN's scratchpads to grow with the samples, not shrink, as they do: per thread, up to
// the threads' share. Its implementations differ by CPU, and so does this: on AMD's Zen 4, oneDNN
// 2.6 pools a plain NCHW input through a 32 KiB scratchpad per sample of 5 x 18 x 19 (a blocked
// copy of it), which no im2col estimate covers. 0 for other layers, or without oneDNN.
std::uint64_t onednn_scratchpad_memory(const Layer& layer, int max_m);

// Samples the plain kernels run through the layers at a time. Each worker thread that a batch of
// max_batch can keep busy holds activation buffers for min(kCpuChunk, max_batch) samples and one
// convolution scratch buffer (memory_plan.h counts on it). oneDNN runs chunks of 2 * kCpuChunk
// samples, one at a time, its programs sharing one set of buffers.
constexpr int kCpuChunk = 8;

// Plans the network for up to max_batch samples. The network must outlive the backend. Threads:
// oneDNN's OpenMP runtime (OMP_NUM_THREADS, else every core); the plain kernels gemm_threads()
// (gemm.h: OpenBLAS's, OPENBLAS_NUM_THREADS, else every core; or the portable kernel's workers). The plain kernels allocate every buffer here; oneDNN
// builds a program (its primitives and buffers) for each chunk size and layer count on first use
// and keeps it, its programs sharing one set of buffers.
std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch, const CpuOptions& options = {});

// Whether this build has oneDNN (no_onednn.cpp stands in for onednn_backend.cpp where it has not).
bool onednn_available();

// The libraries behind both kernel sets, for --version: "oneDNN 2.6.3 (AVX-512, 2 threads); plain
// kernels: OpenBLAS 0.3.21 ... (2 threads)"; without oneDNN, the plain kernels and their sgemm.
std::string cpu_libraries();

// The two kernel sets, as make_cpu_backend picks them.
std::unique_ptr<Backend> make_onednn_backend(const Network& network, int max_batch, bool winograd = true);
std::unique_ptr<Backend> make_plain_backend(const Network& network, int max_batch);

}  // namespace infer

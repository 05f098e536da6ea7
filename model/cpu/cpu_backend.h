// The CPU backend: oneDNN's primitives by default, or the project's own plain kernels. The GPU
// backend's tests compare against it; both CPU kernel sets are compared with the double-precision
// reference of the tests (tests/reference.h).
#pragma once

#include <memory>
#include <string>

#include "../backend.h"

namespace infer {

// Which kernels run the layers:
//   Onednn  oneDNN's JIT primitives (onednn_backend.cpp), on the layouts and ISA it picks (SSE4.1
//           to AVX-512 and AMX; ONEDNN_MAX_CPU_ISA caps it): the default, the fast path.
//   Plain   the project's own plain NCHW kernels (im2col + OpenBLAS sgemm for convolutions and
//           linear layers; ops.h): simple, independent of oneDNN, a second implementation the
//           tests run every op on.
enum class CpuKernels { Onednn, Plain };

struct CpuOptions {
  CpuKernels kernels = CpuKernels::Onednn;
};

// Samples the plain kernels run through the layers at a time. Each worker thread that a batch of
// max_batch can keep busy holds activation buffers for min(kCpuChunk, max_batch) samples and one
// convolution scratch buffer (memory_plan.h counts on it). oneDNN runs chunks of 2 * kCpuChunk
// samples, one at a time, its programs sharing one set of buffers.
constexpr int kCpuChunk = 8;

// Plans the network for up to max_batch samples. The network must outlive the backend. Threads:
// oneDNN's OpenMP runtime (OMP_NUM_THREADS, else every core); the plain kernels use OpenBLAS's
// (OPENBLAS_NUM_THREADS, else every core). The plain kernels allocate every buffer here; oneDNN
// builds a program (its primitives and buffers) for each chunk size and layer count on first use
// and keeps it, its programs sharing one set of buffers.
std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch, const CpuOptions& options = {});

// The libraries behind both kernel sets, for --version: "oneDNN 2.6.3 (AVX-512, 2 threads); plain
// kernels: OpenBLAS 0.3.21 ... (2 threads)".
std::string cpu_libraries();

// The two kernel sets, as make_cpu_backend picks them.
std::unique_ptr<Backend> make_onednn_backend(const Network& network, int max_batch);
std::unique_ptr<Backend> make_plain_backend(const Network& network, int max_batch);

}  // namespace infer

// The CPU backend: the reference every other backend is tested against.
#pragma once

#include <memory>

#include "../backend.h"

namespace infer {

// Which kernels run the layers: the project's own (im2col + OpenBLAS, with the direct AVX-512
// front below), or oneDNN's JIT primitives (onednn_backend.cpp).
enum class CpuKernels { Own, Onednn };

struct CpuOptions {
  // Run the convolutional front of the network (from a group-1 convolution in layer 0 up to the
  // first layer other than conv2d, batch-norm, ReLU or max pooling) with the direct AVX-512
  // kernels of blocked.h, batch-norm folded into the convolutions, when the CPU has AVX-512F.
  // false: every layer on the plain im2col + OpenBLAS kernels (the tests run both).
  bool direct_kernels = true;
  // With direct_kernels: 3x3 stride-1 convolutions after the first layer by Winograd F(2x2, 3x3)
  // (2.25x fewer multiplications; rounding bound in tests/test_cpu_ops.cpp). false: direct.
  bool winograd = true;
  CpuKernels kernels = CpuKernels::Own;
};

// Samples the CPU backend runs through the layers at a time. Each worker thread that a batch of
// max_batch can keep busy holds activation buffers for min(kCpuChunk, max_batch) samples and one
// convolution scratch buffer (memory_plan.h counts on it).
constexpr int kCpuChunk = 8;

// Plans the network for up to max_batch samples and allocates every activation and scratch
// buffer now. The network must outlive the backend. Uses OpenBLAS with its default thread count
// (OPENBLAS_NUM_THREADS or the number of cores).
// With CpuKernels::Onednn, make_onednn_backend.
std::unique_ptr<Backend> make_cpu_backend(const Network& network, int max_batch, const CpuOptions& options = {});

// The CPU backend on oneDNN primitives. Its programs (per batch size and layer count) are built on
// first use. Threads: oneDNN's OpenMP runtime (OMP_NUM_THREADS, else every core).
std::unique_ptr<Backend> make_onednn_backend(const Network& network, int max_batch);

}  // namespace infer

// The project's own CUDA kernels (backends/cudnn/kernels/*.cuh), compiled as host C++ and run by
// the stand-in over an emulated grid: the code that runs is the code in our .cu files, not a
// second implementation of it (issue 32). Included by emulated_kernels.cpp only, before the .cuh
// files, it gives them what nvcc would:
//   - threadIdx, blockIdx, blockDim, gridDim: the indices of the emulated thread running now;
//   - __shared__: one copy per block (the threads of a block run one at a time on one host thread,
//     and the blocks of a launch one after another, so thread_local storage is the block's);
//   - __syncthreads(): a barrier. Each thread of a block runs on a stack of its own (a fiber) and
//     yields there; when every thread of the block has reached the barrier, all go on. Between two
//     barriers the threads run one after another, in alternating order from phase to phase, so a
//     kernel that reads shared memory another thread writes in the same phase gets other values
//     than on the GPU from one phase to the next. A barrier that some threads reach while others
//     have returned (a barrier in divergent code) ends the process naming the kernel;
//   - __half with its conversions, from NVIDIA's cuda_fp16.h, which gcc and clang compile for the host.
// Not emulated: warp operations (__shfl_*, __ballot_sync, ...), atomics, dynamic shared memory.
// A kernel that uses them does not compile here, rather than run with made-up semantics.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <math.h>

#include <functional>

namespace standin::emulated {

// What the running emulated thread sees as its built-in variables.
struct ThreadIndices {
  uint3 thread{0, 0, 0};
  uint3 block{0, 0, 0};
  dim3 block_dim{1, 1, 1};
  dim3 grid_dim{1, 1, 1};
};
extern thread_local ThreadIndices current;

// __syncthreads() of the running emulated thread.
void sync_threads();

// Runs `thread_body` once for every thread of every block of the grid (grid x block threads),
// blocks in order. `barriers`: the kernel calls __syncthreads(), so each thread of a block gets a
// fiber; otherwise the threads run one after another on the caller's stack, and a __syncthreads()
// ends the process naming `kernel`. The caller checked the configuration against the device limits.
void run_grid(const char* kernel, dim3 grid, dim3 block, bool barriers, const std::function<void()>& thread_body);

}  // namespace standin::emulated

// NVIDIA's host headers define __shared__ as nothing for a host compiler.
#undef __shared__
#define __shared__ static thread_local
#define threadIdx (::standin::emulated::current.thread)
#define blockIdx (::standin::emulated::current.block)
#define blockDim (::standin::emulated::current.block_dim)
#define gridDim (::standin::emulated::current.grid_dim)
inline void __syncthreads() { ::standin::emulated::sync_threads(); }

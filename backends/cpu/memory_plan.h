// What running a network costs in memory, computed from its shapes alone: a model whose activations
// would need gigabytes (a 1x1 convolution to a million channels, a 1000000x1000000 input) is refused
// with the numbers before anything is allocated (app/memory_limit.h), instead of ending in
// std::bad_alloc or the kernel's OOM killer.
//
// An upper bound of what a backend built for a batch size allocates, plus the app's buffers around
// it; not an exact count (tests/backends/cpu/test_memory_plan.cpp checks the bound against the CPU backend's real
// allocations). Bytes, float32 throughout:
//   parameter_bytes  the network's own copy of every tensor, the backend's copy (oneDNN's reordered
//                    weights, channels of both sides rounded up to 16, twice: with and without a
//                    folded batch-norm; the GPU's device copy is no larger), and the largest tensor
//                    once more (folding makes a temporary)
//   sample_bytes     per sample: every activation (the input and each layer's output) twice, as the
//                    backend's buffer and as a copy in another layout (oneDNN's channel-blocked
//                    layouts: channels rounded up to 16; the GPU's z buffer), plus the app's input,
//                    output and top-k buffers and the GPU's staging of the largest activation
//   workspace_bytes  the largest convolution's scratch for one sample (an im2col matrix), held once
//                    per chunk of kCpuChunk samples (backends/cpu/cpu_backend.h)
// Not counted: cuDNN's own workspace (it depends on the algorithm cuDNN picks), decoded images
// (bounded separately, load_image.h), the code and the libraries.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/network.h"

namespace infer {

struct MemoryPlan {
  std::uint64_t parameter_bytes = 0;
  std::uint64_t sample_bytes = 0;
  std::uint64_t workspace_bytes = 0;
  // oneDNN's own memory (cpu_backend.h), by the largest program size m = 1 .. 16 (index m - 1): its
  // one shared scratchpad, sized for the largest any convolution or inner product asks for
  // (Winograd or direct: oneDNN's implementations, and so their scratchpads, differ by CPU), and
  // the Winograd convolutions' transformed weights of every layer, twice (with and without a
  // folded batch-norm). Empty without oneDNN.
  std::vector<std::uint64_t> onednn_bytes;

  // Bytes for a backend built for max_batch >= 1 samples: the parameters, the activations of
  // max_batch samples (rounded up to whole chunks of kCpuChunk above one chunk: the CPU backend's
  // workers each hold a chunk), one workspace per chunk and oneDNN's own memory for programs
  // of up to max_batch samples. Saturates at UINT64_MAX, never wraps.
  std::uint64_t bytes(int max_batch) const;
};

// The plan of a valid network (its constructor has checked the shapes). Allocates nothing that
// grows with the network's activations.
MemoryPlan plan_memory(const Network& network);

// The largest batch size in [1, max_batch] whose bytes() are at most `limit`; 0 when even one
// sample is over it.
int largest_batch_within(const MemoryPlan& plan, int max_batch, std::uint64_t limit);

}  // namespace infer

// The launch shapes of the backend's kernels, shared by their device code (this folder) and the
// host code that launches them (backends/cudnn/kernels.h). Plain C++: NVRTC compiles it too.
#pragma once

namespace infer::cudnn {

constexpr int kTopKThreads = 256;             // top_k.cuh: one block of this many threads per sample
constexpr int kElementThreads = 256;  // convert.cuh, pointwise.cuh, resize.cuh, layernorm.cuh: threads per block
constexpr unsigned kMaxElementBlocks = 4096;  // their grid-stride loops cover the rest

// The grid of an element-wise kernel over `total` elements: one thread each, at least one block,
// at most kMaxElementBlocks.
constexpr unsigned element_blocks(unsigned long long total) {
  const unsigned long long blocks = (total + kElementThreads - 1) / kElementThreads;
  return blocks < 1 ? 1u : blocks > kMaxElementBlocks ? kMaxElementBlocks : static_cast<unsigned>(blocks);
}

}  // namespace infer::cudnn

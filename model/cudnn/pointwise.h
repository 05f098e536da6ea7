// The elementwise ops that cuDNN's legacy API does not cover as the network defines them
// (network.h): one kernel, y[i] = f(x[i]) for i < count, computed in float.
//
// Launches on `stream` (capturable into a CUDA graph) and returns cudaGetLastError() of the launch.
// x and y hold `count` floats, or `count` IEEE half values when `half` (read as half, computed in
// float, rounded to nearest even on store). x == y is allowed. NaN in gives NaN out for every op.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace infer::cudnn {

// The op codes; a and b are its parameters.
enum PointwiseOp : int {
  kPointwiseSigmoid = 0,      // 1 / (1 + exp(-x))
  kPointwiseClip = 1,         // min(max(x, a), b)
  kPointwiseHardSigmoid = 2,  // max(0, min(1, a * x + b))
  kPointwiseHardSwish = 3,    // x * max(0, min(1, a * x + b))
  kPointwiseSilu = 4,         // x / (1 + exp(-x))
};

cudaError_t launch_pointwise(int op, float a, float b, const void* x, void* y, std::size_t count, bool half,
                             cudaStream_t stream);

}  // namespace infer::cudnn

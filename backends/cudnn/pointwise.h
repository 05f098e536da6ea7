// The pointwise ops (ops.h INFER_POINTWISE_OPS), which cuDNN's legacy API does not cover as the
// network defines them: one kernel, y[i] = f(x[i]) for i < count, computed in float.
//
// Launches on `stream` (capturable into a CUDA graph) and returns cudaGetLastError() of the launch.
// x and y hold `count` floats, or `count` IEEE half values when `half` (read as half, computed in
// float, rounded to nearest even on store). x == y is allowed. NaN in gives NaN out for every op.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace infer::cudnn {

// op is a PointwiseOp (ops.h) as an int, a and b its parameters (PointwiseAttrs); the formulas are
// pointwise_formula.h's. Another op code: cudaErrorInvalidValue.
cudaError_t launch_pointwise(int op, float a, float b, const void* x, void* y, std::size_t count, bool half,
                             cudaStream_t stream);

}  // namespace infer::cudnn

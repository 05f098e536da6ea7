// Layout and type conversion between the network's float NCHW tensors and the half NHWC tensors of
// the Fp16 plan (plan.h). Own kernels rather than cudnnTransformTensor: cuDNN documents that call
// for a change of layout, and returns CUDNN_STATUS_BAD_PARAM when the two descriptors' data types
// differ; these kernels do both in one pass.
//
// Both launch on `stream` (capturable into a CUDA graph) and return cudaGetLastError() of the
// launch. Shapes: n x c x h x w elements, fully packed; n*c*h*w < 2^31 is not required (size_t).
#pragma once

#include <cuda_runtime_api.h>

namespace infer::cudnn {

// out[n][h][w][c] = half(in[n][c][h][w]), rounded to nearest even. `out` holds half values.
cudaError_t launch_float_nchw_to_half_nhwc(const float* in, void* out, int n, int c, int h, int w, cudaStream_t stream);

// out[n][c][h][w] = float(in[n][h][w][c]), exact. `in` holds half values.
cudaError_t launch_half_nhwc_to_float_nchw(const void* in, float* out, int n, int c, int h, int w, cudaStream_t stream);

}  // namespace infer::cudnn

// The device code of top-k selection (backends/cudnn/top_k.h has the contract and limits).
// Device code only, without the standard library: nvcc (CUDA 13) and NVRTC (CUDA 12) compile it.
#pragma once

#include "backends/cudnn/kernels/launch_shape.h"

namespace infer::cudnn::kernels {

// The strict total order of Backend::top_k on (score, index) pairs: true when (a, ia) ranks first.
__device__ inline bool ranks_before(float a, int ia, float b, int ib) {
  const bool nan_a = isnan(a), nan_b = isnan(b);
  if (nan_a != nan_b) return nan_a;
  if (!nan_a && a != b) return a > b;
  return ia < ib;
}

// One block per sample (blockIdx.x). Rank j is the best element that ranks after rank j - 1.
__global__ void top_k_kernel(const float* scores_in, int classes, int k, int* classes_out, float* scores_out) {
  __shared__ float best_score[kTopKThreads];
  __shared__ int best_index[kTopKThreads];
  const float* row = scores_in + static_cast<size_t>(blockIdx.x) * classes;
  int* out_classes = classes_out + static_cast<size_t>(blockIdx.x) * k;
  float* out_scores = scores_out + static_cast<size_t>(blockIdx.x) * k;
  const int t = threadIdx.x;

  float previous_score = 0.0f;
  int previous_index = -1;  // none yet: every element is eligible
  for (int j = 0; j < k; ++j) {
    float score = 0.0f;
    int index = -1;  // -1: this thread found nothing eligible
    for (int c = t; c < classes; c += kTopKThreads) {
      const float v = row[c];
      if (previous_index >= 0 && !ranks_before(previous_score, previous_index, v, c)) continue;
      if (index < 0 || ranks_before(v, c, score, index)) {
        score = v;
        index = c;
      }
    }
    best_score[t] = score;
    best_index[t] = index;
    __syncthreads();
    for (int stride = kTopKThreads / 2; stride > 0; stride /= 2) {
      if (t < stride) {
        const int other = best_index[t + stride];
        const bool better =
            best_index[t] < 0 || ranks_before(best_score[t + stride], other, best_score[t], best_index[t]);
        if (other >= 0 && better) {
          best_score[t] = best_score[t + stride];
          best_index[t] = other;
        }
      }
      __syncthreads();
    }
    // k <= classes: rank j always exists. Every thread reads the winner before anyone overwrites it.
    previous_score = best_score[0];
    previous_index = best_index[0];
    if (t == 0) {
      out_classes[j] = previous_index;
      out_scores[j] = previous_score;
    }
    __syncthreads();
  }
}

}  // namespace infer::cudnn::kernels

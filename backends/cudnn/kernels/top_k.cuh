// The device code of top-k selection (backends/cudnn/top_k.h has the contract and limits), alone
// or fused with the softmax before it. Device code only, without the standard library: nvcc
// (CUDA 13) and NVRTC (CUDA 12) compile it.
#pragma once

#include <cuda_fp16.h>

#include "backends/cudnn/kernels/launch_shape.h"

namespace infer::cudnn::kernels {

// The strict total order of Backend::top_k on (score, index) pairs: true when (a, ia) ranks first.
__device__ inline bool ranks_before(float a, int ia, float b, int ib) {
  const bool nan_a = isnan(a), nan_b = isnan(b);
  if (nan_a != nan_b) return nan_a;
  if (!nan_a && a != b) return a > b;
  return ia < ib;
}

// The k best of one row, by the block of kTopKThreads threads that owns it: `score(c)` is the
// row's element c (0 <= c < classes). Rank j is the best element that ranks after rank j - 1.
// Every thread of the block calls it (it synchronises the block).
template <typename Row>
__device__ void select_in_block(const Row& score, int classes, int k, int* out_classes, float* out_scores) {
  __shared__ float best_score[kTopKThreads];
  __shared__ int best_index[kTopKThreads];
  const int t = threadIdx.x;
  float previous_score = 0.0f;
  int previous_index = -1;  // none yet: every element is eligible
  for (int j = 0; j < k; ++j) {
    float best = 0.0f;
    int index = -1;  // -1: this thread found nothing eligible
    for (int c = t; c < classes; c += kTopKThreads) {
      const float v = score(c);
      if (previous_index >= 0 && !ranks_before(previous_score, previous_index, v, c)) continue;
      if (index < 0 || ranks_before(v, c, best, index)) {
        best = v;
        index = c;
      }
    }
    best_score[t] = best;
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

// A row of float scores as they are.
struct ScoreRow {
  const float* row;
  __device__ float operator()(int c) const { return row[c]; }
};

// One block per sample (blockIdx.x): the k best of its `classes` scores.
__global__ void top_k_kernel(const float* scores_in, int classes, int k, int* classes_out, float* scores_out) {
  const size_t sample = blockIdx.x;
  select_in_block(ScoreRow{scores_in + sample * classes}, classes, k, classes_out + sample * k,
                  scores_out + sample * k);
}

// A row of logits (floats, or IEEE half values when `half`) read as float.
struct LogitRow {
  const void* row;
  int half;
  __device__ float operator()(int c) const {
    return half ? __half2float(static_cast<const __half*>(row)[c]) : static_cast<const float*>(row)[c];
  }
};

// The softmax of a row of logits, p(c) = exp(x(c) - max) / sum over c of exp(x(c) - max): the
// formula of cuDNN's CUDNN_SOFTMAX_ACCURATE and of the CPU backend, computed in float. Any NaN or
// infinity among the logits makes every p NaN, as there.
struct SoftmaxRow {
  LogitRow logit;
  float largest;
  float sum;
  __device__ float operator()(int c) const { return expf(logit(c) - largest) / sum; }
};

// Block-wide reduction of one float per thread in `slot` (kTopKThreads of them), by a tree over
// shared memory: the result is in slot[0] for every thread when it returns. `sum`: add, else max.
__device__ inline float reduce_in_block(float* slot, float value, bool sum) {
  const int t = threadIdx.x;
  slot[t] = value;
  __syncthreads();
  for (int stride = kTopKThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) slot[t] = sum ? slot[t] + slot[t + stride] : fmaxf(slot[t], slot[t + stride]);
    __syncthreads();
  }
  const float result = slot[0];
  __syncthreads();  // every thread has read it before the slots are written again
  return result;
}

// The softmax over each sample's `classes` logits and the k best of its probabilities in one
// launch: what a softmax step followed by top_k_kernel computes, without writing the
// probabilities. One block per sample (blockIdx.x); `logits` holds n x classes floats, or IEEE
// half values when `half`. The maximum ignores NaN (fmaxf); a NaN logit still makes the sum, and
// so every probability, NaN.
__global__ void softmax_top_k_kernel(const void* logits, int half, int classes, int k, int* classes_out,
                                     float* scores_out) {
  __shared__ float slot[kTopKThreads];
  const size_t sample = blockIdx.x;
  const size_t first = sample * classes;
  const LogitRow logit{half ? static_cast<const void*>(static_cast<const __half*>(logits) + first)
                            : static_cast<const void*>(static_cast<const float*>(logits) + first),
                       half};
  const int t = threadIdx.x;
  float largest = logit(0);
  for (int c = t; c < classes; c += kTopKThreads) largest = fmaxf(largest, logit(c));
  largest = reduce_in_block(slot, largest, false);
  float sum = 0.0f;
  for (int c = t; c < classes; c += kTopKThreads) sum += expf(logit(c) - largest);
  sum = reduce_in_block(slot, sum, true);
  select_in_block(SoftmaxRow{logit, largest, sum}, classes, k, classes_out + sample * k, scores_out + sample * k);
}

}  // namespace infer::cudnn::kernels

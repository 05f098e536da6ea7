// Top-k selection on the device (kernels/top_k.cuh, launched by Kernels::top_k in kernels.h): per
// sample, the k best of `classes` float scores, in the order of Backend::top_k (backend.h): larger
// first, equal scores by lower index, NaN above every number.
//
// Limits, enforced by check_top_k_limits() on the host (std::invalid_argument naming the value):
//   1 <= classes <= kTopKMaxClasses, 1 <= k <= classes, 1 <= n <= kTopKMaxSamples.
// One block of kTopKThreads threads per sample finds the k results one after another, each a scan
// of the row for the best element ranking after the previous result: O(k * classes / 256) steps
// per sample, simple and exact (no ties lost, no sort). For this project's 10 classes that is a
// few microseconds; the limits keep the worst case (k = classes = 65536) near a second.
#pragma once

#include "backends/cudnn/kernels/launch_shape.h"
#include "backends/gpu_plugin.h"

namespace infer::cudnn {

// Defined in gpu_plugin.h: the engine (GpuBackend::top_k) selects on the host beyond them.
constexpr int kTopKMaxClasses = INFER_GPU_TOP_K_MAX_CLASSES;
constexpr int kTopKMaxSamples = INFER_GPU_TOP_K_MAX_SAMPLES;  // one block per sample; far above any batch the app runs

// Throws std::invalid_argument unless the limits above hold.
void check_top_k_limits(int n, int classes, int k);

}  // namespace infer::cudnn

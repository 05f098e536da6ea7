// The host-side limits of top-k selection on the device (top_k.h).
#include <stdexcept>
#include <string>

#include "backends/cudnn/top_k.h"

namespace infer::cudnn {

void check_top_k_limits(int n, int classes, int k) {
  if (classes < 1 || classes > kTopKMaxClasses) {
    throw std::invalid_argument("top_k on the GPU: the last layer has " + std::to_string(classes) +
                                " outputs per sample, the device selection handles 1 to " +
                                std::to_string(kTopKMaxClasses) + "; use forward() and select on the host");
  }
  if (k < 1 || k > classes) {
    throw std::invalid_argument("top_k: k = " + std::to_string(k) + " is outside [1, " + std::to_string(classes) +
                                "] (the last layer's output size)");
  }
  if (n < 1 || n > kTopKMaxSamples) {
    throw std::invalid_argument("top_k on the GPU: " + std::to_string(n) +
                                " samples, the device selection handles 1 "
                                "to " +
                                std::to_string(kTopKMaxSamples) + " per call");
  }
}

}  // namespace infer::cudnn

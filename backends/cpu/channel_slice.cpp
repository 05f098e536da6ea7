// Channel slice (ShuffleNet V2's chunk): output channel c is input channel begin + c. In NCHW the
// channels [begin, end) of a sample are one contiguous run of planes, copied whole.
#include <algorithm>
#include <cstddef>

#include "backends/cpu/ops.h"

namespace infer::cpu {

void channel_slice_forward(const Layer& layer, const float* in, int n, float* out) {
  const std::size_t plane = static_cast<std::size_t>(layer.in.h) * static_cast<std::size_t>(layer.in.w);
  const std::size_t first = static_cast<std::size_t>(layer.channel_slice().begin) * plane;
  const std::size_t count = layer.out.size();  // (end - begin) planes
  for (std::size_t b = 0; b < static_cast<std::size_t>(n); ++b) {
    std::copy_n(in + b * layer.in.size() + first, count, out + b * count);
  }
}

}  // namespace infer::cpu

// The oneDNN backend's process-wide settings (onednn_backend.cpp); Linux only, as oneDNN is (the
// Windows build has the plain kernels).
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

// oneDNN 2.6's primitive cache breaks the primitives created after its evictions
// (std::bad_array_new_length from brgemm_kernel_create: DenseNet-169 then DenseNet-201 in one
// process); the backend turns it off before its first primitive. Before that, the capacity here
// was oneDNN's default, 1024.
TEST(OnednnBackend, RunsWithOnednnsPrimitiveCacheOff) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = random_network(rng, {3, 9, 9}, {conv_layer("c", 8, 3, 1, 1)});
  const std::vector<float> input = rng.vector(2 * net.input().dims.size());
  std::vector<float> output(2 * net.output_dims().size());
  make_cpu_backend(net, 2, CpuOptions{CpuKernels::Onednn})->forward(input.data(), 2, output.data());
  for (float v : output) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(dnnl::get_primitive_cache_capacity(), 0);
}

}  // namespace
}  // namespace infer::test

// The memory plan (backends/cpu/memory_plan.h): hand-computed sizes, the bound against what the CPU backend
// really allocates (glibc's mallinfo2), batch fitting, and sizes beyond 64 bits that must saturate.
#include <gtest/gtest.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <malloc.h>

#include <cstdint>
#include <limits>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/memory_plan.h"
#include "platform/byte_size.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

TEST(MemoryPlan, BytesStringUsesBinaryUnitsWithOneDecimal) {
  EXPECT_EQ(bytes_string(0), "0 B");
  EXPECT_EQ(bytes_string(1023), "1023 B");
  EXPECT_EQ(bytes_string(1024), "1.0 KiB");
  EXPECT_EQ(bytes_string(1536), "1.5 KiB");
  EXPECT_EQ(bytes_string(1024 * 1024 - 1), "1.0 MiB");  // not "1024.0 KiB"
  EXPECT_EQ(bytes_string(std::uint64_t{4} << 30), "4.0 GiB");
  EXPECT_EQ(bytes_string(std::uint64_t{3} << 40), "3.0 TiB");
  EXPECT_EQ(bytes_string(std::numeric_limits<std::uint64_t>::max()), "16.0 EiB");
}

// Input 3x2x2 -> relu: no parameters. Per sample, in floats:
//   input   12 plain + 16 (channels rounded up to 16) x 2 x 2 = 64 blocked
//   relu    12 plain + 64 blocked
//   app     12 input + 12 largest activation + 4 x 12 output
// = 12 + 64 + 12 + 64 + 12 + 12 + 48 = 224 floats = 896 bytes.
TEST(MemoryPlan, HandComputedReluNetwork) {
  Random rng;
  const Network net = random_network(rng, {3, 2, 2}, {plain_layer("relu", LayerKind::Relu)});
  const MemoryPlan plan = plan_memory(net);
  EXPECT_EQ(plan.parameter_bytes, 0u);
  EXPECT_EQ(plan.sample_bytes, 896u);
  EXPECT_EQ(plan.workspace_bytes, 0u);
  EXPECT_EQ(plan.bytes(1), 896u);
  EXPECT_EQ(plan.bytes(8), 8u * 896u);
  EXPECT_EQ(plan.bytes(9), 16u * 896u);  // the plain kernels' second worker holds a whole chunk of 8
}

// Input 1x4x4 -> conv(2, 3x3, pad 1) (the tiny model's first layer).
//   parameters  18 + 2 as loaded; reordered twice (without and with a folded batch-norm): 2 x (16
//               x 16 x 9 + 16) = 4640 (both channel counts rounded up to 16); the largest tensor 18
//               once more: 4678 floats = 18712 bytes
//   per sample  input 16 + 16 x 4 x 4 = 256 blocked; conv 32 + 256; app 16 + 32 + 4 x 32 = 176:
//               736 floats = 2944 bytes
//   workspace   im2col 1 x 3 x 3 x 4 x 4 = 144 floats = 576 bytes
//   oneDNN      the scratchpad its direct convolution asks for on this CPU, for any program size
//               (no Winograd: 1 input channel), whatever it is
TEST(MemoryPlan, HandComputedConvolution) {
  Random rng;
  const Network net = random_network(rng, {1, 4, 4}, {conv_layer("conv", 2, 3, 1, 1)});
  const MemoryPlan plan = plan_memory(net);
  EXPECT_EQ(plan.parameter_bytes, 18712u);
  EXPECT_EQ(plan.sample_bytes, 2944u);
  EXPECT_EQ(plan.workspace_bytes, 576u);
  const std::uint64_t scratchpad = onednn_scratchpad_memory(net.layers()[0], 2 * kCpuChunk);
  EXPECT_EQ(plan.bytes(3), 18712u + 3u * 2944u + 576u + scratchpad);
  EXPECT_EQ(plan.bytes(64), 18712u + 64u * 2944u + 8u * 576u + scratchpad);
}

// Bytes the heap holds now: glibc's count (every arena, plus chunks served by mmap), or under
// AddressSanitizer, whose allocator replaces glibc's, its own count.
std::uint64_t heap_bytes() {
#if INFER_TEST_ASAN
  return __sanitizer_get_current_allocated_bytes();
#else
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
#endif
}

struct PlanCase {
  const char* what;
  Dims input;
  std::vector<Layer> layers;
};

std::vector<PlanCase> plan_cases() {
  return {{"fashion-like", {1, 12, 12}, fashion_like_layers()},
          {"3x3 after 3x3",
           {16, 9, 9},
           {conv_layer("c1", 20, 3, 1, 1), batchnorm_layer("bn"), plain_layer("r", LayerKind::Relu),
            conv_layer("c2", 33, 3, 1, 1), plain_layer("f", LayerKind::Flatten), linear_layer("fc", 5)}},
          {"wide pointwise",
           {1, 10, 10},
           {conv_layer("c", 300, 1), plain_layer("g", LayerKind::GlobalAvgPool), plain_layer("f", LayerKind::Flatten),
            linear_layer("fc", 3)}},
          {"large padding",
           {2, 2, 3},
           {conv_layer("c", 5, 3, 1, 9), pool_layer("p", LayerKind::MaxPool, 2, 2), conv_layer("c2", 4, 3, 2, 4, 2)}},
          {"linear heavy",
           {3, 8, 8},
           {plain_layer("f", LayerKind::Flatten), linear_layer("fc1", 1000), plain_layer("r", LayerKind::Relu),
            linear_layer("fc2", 1), plain_layer("s", LayerKind::Softmax)}}};
}

// The plan is an upper bound of what the CPU backend allocates, with either kernel set, at batch
// sizes around their chunks (8 plain, 16 oneDNN): the backend built, then run at the batch size and
// at a shorter one, so that oneDNN has built its program for a shorter last chunk too (its
// programs share their buffers: the second may not add a second set).
TEST(MemoryPlan, BoundsWhatTheCpuBackendAllocates) {
  Random rng;
  SCOPED_TRACE(rng.trace());
  // oneDNN's own objects (primitives, their JIT kernels) are the library's, which the plan does
  // not count: with its primitive cache on, the warm-up below leaves them kept by the library, as
  // they were before the backend turned the cache off (onednn_backend.cpp). The cache is on for
  // this test only, with room for all of its primitives (no eviction, which is what breaks 2.6).
  make_cpu_backend(random_network(rng, {1, 4, 4}, {conv_layer("c", 2, 1)}), 1, CpuOptions{CpuKernels::Onednn});
  struct CacheOn {
    int before = dnnl::get_primitive_cache_capacity();
    CacheOn() { dnnl::set_primitive_cache_capacity(4096); }
    ~CacheOn() { dnnl::set_primitive_cache_capacity(before); }
  } cache_on;
  for (const PlanCase& c : plan_cases()) {
    SCOPED_TRACE(c.what);
    const Network net = random_network(rng, c.input, c.layers);
    const MemoryPlan plan = plan_memory(net);
    std::uint64_t own = 0;  // the network's copy, allocated before the backend
    for (const Layer& l : net.layers()) {
      own += 4 * (l.params.weight.size() + l.params.bias.size() + l.params.running_mean.size() +
                  l.params.running_var.size());
    }
    for (CpuKernels kernels : {CpuKernels::Onednn, CpuKernels::Plain}) {
      for (int batch : {1, 3, 8, 9, 17, 64}) {
        SCOPED_TRACE(std::string(kernels == CpuKernels::Onednn ? "onednn" : "plain") + ", batch " +
                     std::to_string(batch));
        const std::vector<float> input = rng.vector(static_cast<std::size_t>(batch) * net.input().dims.size());
        std::vector<float> output(static_cast<std::size_t>(batch) * net.output_dims().size());
        const auto build_and_run = [&] {
          const std::unique_ptr<Backend> backend = make_cpu_backend(net, batch, CpuOptions{kernels});
          backend->forward(input.data(), batch, output.data());
          backend->forward(input.data(), (batch + 1) / 2, output.data());
          return heap_bytes();
        };
        // Once before measuring: what the libraries keep for the process (OpenMP's thread team,
        // oneDNN's primitive cache, OpenBLAS's buffers) is theirs, not this backend's (memory_plan.h
        // does not count the libraries).
        build_and_run();
        const std::uint64_t before = heap_bytes();
        EXPECT_LE(build_and_run() - before, plan.bytes(batch) - own);
      }
    }
  }
}

TEST(MemoryPlan, LargestBatchWithinALimit) {
  Random rng;
  const Network net =
      random_network(rng, {1, 4, 4}, {conv_layer("conv", 2, 3, 1, 1), plain_layer("relu", LayerKind::Relu)});
  const MemoryPlan plan = plan_memory(net);
  for (int k = 1; k <= 20; ++k) {
    SCOPED_TRACE(k);
    // Batches 9 to 16 need the same two chunks of 8.
    EXPECT_EQ(largest_batch_within(plan, 64, plan.bytes(k)), k > 8 ? (k + 7) / 8 * 8 : k);
    EXPECT_LT(largest_batch_within(plan, 64, plan.bytes(k) - 1), k);
  }
  EXPECT_EQ(largest_batch_within(plan, 64, plan.bytes(64)), 64);
  EXPECT_EQ(largest_batch_within(plan, 5, std::numeric_limits<std::uint64_t>::max()), 5);
  EXPECT_EQ(largest_batch_within(plan, 64, plan.bytes(1) - 1), 0);
}

// 1000000 channels of 1000000x1000000: 4e18 bytes per activation, the sums beyond 2^64. The plan
// saturates, so no limit lets it through.
TEST(MemoryPlan, SizesBeyondSixtyFourBitsSaturate) {
  const Dims huge{1000000, 1000000, 1000000};
  InputSpec input{huge, std::vector<float>(1000000, 0.5f), std::vector<float>(1000000, 0.25f), {}, {}};
  const Network net("huge", input, {plain_layer("r1", LayerKind::Relu), plain_layer("r2", LayerKind::Relu)});
  const MemoryPlan plan = plan_memory(net);
  EXPECT_EQ(plan.sample_bytes, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(plan.bytes(1), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(largest_batch_within(plan, 64, std::numeric_limits<std::uint64_t>::max() - 1), 0);
}

}  // namespace
}  // namespace infer::test

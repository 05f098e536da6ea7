// --max-memory end to end (issue 11, item 11). Models whose activations would need gigabytes were
// built into a backend and ended in std::bad_alloc (exit 1): they are refused from their shapes,
// before anything is allocated for them, with exit 3 and the numbers. The limit can be lowered and
// raised, and a batch over it is made smaller rather than refused.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "backends/cpu/memory_plan.h"
#include "backends/cpu/threads.h"
#include "formats/model_file.h"
#include "platform/byte_size.h"
#include "tests/support/model_cases.h"
#include "tests/support/process.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

const std::string kImage = test_file("samples/bag.png");
const std::string kSamples = test_file("samples");

// `text` with `from` replaced by `to` (a test failure if `from` is absent).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "not found: " << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

class MemoryLimit : public ::testing::Test {
 protected:
  void write_model(const std::string& toml, const std::vector<Tensor>& tensors) {
    write_file(dir_ / "tiny.toml", toml);
    write_file(dir_ / "tiny.safetensors", safetensors_bytes(tensors));
  }
  std::string model() const { return (dir_ / "tiny.toml").string(); }
  // infer --json --device cpu --model <model> args... <inputs>
  ProcessResult infer(const std::vector<std::string>& args, const std::string& inputs = kImage) const {
    std::vector<std::string> all{"--json", "--device", "cpu", "--model", model()};
    all.insert(all.end(), args.begin(), args.end());
    all.push_back(inputs);
    return run_process(infer_exe(), all);
  }
  // The same with the address space capped at 4 GiB (ulimit -v): an infer that builds the backend of
  // a huge model (one without the check) fails its allocation at once instead of filling the
  // machine's memory until the OOM killer ends it.
  // Under AddressSanitizer, which reserves terabytes of address space for its shadow memory, the
  // cap is its allocator's own limit (malloc_limit_mb) instead.
  ProcessResult infer_capped() const {
#if INFER_TEST_ASAN
    const char* options = std::getenv("ASAN_OPTIONS");
    return run_process(infer_exe(), {"--json", "--device", "cpu", "--model", model(), kImage},
                       {std::string("ASAN_OPTIONS=") + (options ? options : "") + ":malloc_limit_mb=4096"});
#else
    return run_process("/bin/sh", {"-c", "ulimit -v 4194304 && exec \"$0\" \"$@\"", infer_exe(), "--json", "--device",
                                   "cpu", "--model", model(), kImage});
#endif
  }
  // The run was refused before any image: exit 3 and one stderr line naming the model with the
  // bytes one sample needs (as the plan computes them), the limit and the option that raises it.
  // Returns the plan's bytes for one sample.
  std::uint64_t expect_refused(const ProcessResult& r, const std::string& limit) const {
    // Planned as infer plans it for one image: on one thread (oneDNN's scratchpads are per thread,
    // and the plan asks oneDNN for them). This process's threads are put back after.
    const int threads = cpu::onednn_threads();
    cpu::set_threads(1);
    const std::uint64_t one = plan_memory(load_model(model()).network).bytes(1);
    cpu::set_threads(threads);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    const std::vector<std::string> lines = ProcessResult::lines(r.err);
    EXPECT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(
        r.err.rfind("infer: " + model() + ": the model needs " + bytes_string(one) + " of memory for one sample", 0),
        0u)
        << r.err;
    EXPECT_NE(r.err.find("more than the --max-memory limit of " + limit + ": raise the limit (--max-memory "),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
    return one;
  }

  Random rng_;
  TempDir dir_;
};

// The tiny model with a 1000000x1000000 input (the largest the TOML accepts) and a global average
// pool where it flattens: 4 TB for the input of one sample.
TEST_F(MemoryLimit, AMillionByAMillionInputIsRefused) {
  SCOPED_TRACE(rng_.trace());
  std::string toml = replaced(kTinyToml, "height = 4\nwidth = 4", "height = 1000000\nwidth = 1000000");
  toml = replaced(toml, "type = \"flatten\"", "type = \"global_avgpool\"");
  write_model(toml, {f32("conv.weight", {2, 1, 3, 3}, rng_), f32("conv.bias", {2}, rng_),
                     f32("fc.weight", {3, 2}, rng_), f32("fc.bias", {3}, rng_)});
  const ProcessResult r = infer_capped();
  const std::uint64_t one = expect_refused(r, "4.0 GiB");
  EXPECT_GE(one, std::uint64_t{4'000'000'000'000});
  EXPECT_LT(r.max_rss_kib, 256 * 1024) << "peak RSS in KiB";
}

// A 1x1 convolution from a 28x28 input to a million channels: 4 MB of weights, 3.1 GB for one
// sample's convolution output alone.
TEST_F(MemoryLimit, AMillionChannelConvolutionIsRefused) {
  SCOPED_TRACE(rng_.trace());
  std::string toml = replaced(kTinyToml, "height = 4\nwidth = 4", "height = 28\nwidth = 28");
  toml = replaced(toml, "out_channels = 2\nkernel = [3, 3]\npadding = [1, 1]", "out_channels = 1000000\nkernel = 1");
  toml = replaced(toml, "type = \"relu\"", "type = \"global_avgpool\"");
  write_model(toml, {f32("conv.weight", {1000000, 1, 1, 1}, rng_), f32("conv.bias", {1000000}, rng_),
                     f32("fc.weight", {3, 1000000}, rng_), f32("fc.bias", {3}, rng_)});
  const ProcessResult r = infer_capped();
  const std::uint64_t one = expect_refused(r, "4.0 GiB");
  EXPECT_GE(one, std::uint64_t{1000000} * 28 * 28 * 4);
  EXPECT_LT(r.max_rss_kib, 256 * 1024) << "peak RSS in KiB";
  RecordProperty("peak_rss_kib", std::to_string(r.max_rss_kib));
}

// A 1x1 input padded by 1000000 with a stride of 1000000 gives a 3x3 output. Neither kernel set
// materialises the padding (oneDNN pads virtually; the plain kernels' im2col matrix is the 9
// outputs' taps), so it runs, in bounded memory. (The direct AVX-512 kernels, removed, held the
// padded input: 2000001 x 2000001 floats, and it was refused.)
TEST_F(MemoryLimit, APaddingOfAMillionRunsInBoundedMemory) {
  SCOPED_TRACE(rng_.trace());
  std::string toml = replaced(kTinyToml, "height = 4\nwidth = 4", "height = 1\nwidth = 1");
  toml = replaced(toml, "out_channels = 2\nkernel = [3, 3]\npadding = [1, 1]",
                  "out_channels = 2\nkernel = 1\npadding = 1000000\nstride = 1000000");
  write_model(toml, {f32("conv.weight", {2, 1, 1, 1}, rng_), f32("conv.bias", {2}, rng_),
                     f32("fc.weight", {3, 18}, rng_), f32("fc.bias", {3}, rng_)});
  const ProcessResult r = infer_capped();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_LT(r.max_rss_kib, 256 * 1024) << "peak RSS in KiB";
}

TEST_F(MemoryLimit, TheLimitCanBeLoweredAndRaised) {
  SCOPED_TRACE(rng_.trace());
  write_model(kTinyToml, tiny_tensors(rng_));
  expect_refused(infer({"--max-memory", "1K"}), "1.0 KiB");
  expect_refused(infer({"--max-memory", "1000"}), "1000 B");
  for (const char* limit : {"1M", "100M", "4G", "1T"}) {
    SCOPED_TRACE(limit);
    const ProcessResult r = infer({"--max-memory", limit});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(r.out_lines().size(), 1u);
  }
}

// Under a limit that holds 5 samples, --batch 64 runs batches of 5, says so once, and gives the
// same results as a run of batches of 5 without a limit. (Not as one batch of all: a convolution of
// another batch size may run another kernel whose sums round differently, as oneDNN does on AVX2.)
TEST_F(MemoryLimit, ABatchOverTheLimitIsMadeSmaller) {
  SCOPED_TRACE(rng_.trace());
  write_model(kTinyToml, tiny_tensors(rng_));
  const MemoryPlan plan = plan_memory(load_model(model()).network);
  const std::uint64_t limit = plan.bytes(5);
  const ProcessResult small = infer({"--batch", "64", "--max-memory", std::to_string(limit)}, kSamples);
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_EQ(small.err, "infer: notice: --batch 64 would need " + bytes_string(plan.bytes(64)) +
                           " of memory, more than the --max-memory limit of " + bytes_string(limit) +
                           "; running batches of 5\n");
  const ProcessResult whole = infer({"--batch", "5"}, kSamples);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(whole.err, "");
  EXPECT_GT(whole.out_lines().size(), 5u) << "too few samples for more than one batch";
  EXPECT_EQ(small.out, whole.out);
}

// The inputs, when they are only image files, bound the batch: a limit that holds 2 samples but not
// --batch 64 says nothing for 1 or 2 images (nothing is planned for 64), and runs batches of 2 for a
// folder (whose count is known only later), saying so.
TEST_F(MemoryLimit, NamedImagesBoundTheBatch) {
  SCOPED_TRACE(rng_.trace());
  write_model(kTinyToml, tiny_tensors(rng_));
  const MemoryPlan plan = plan_memory(load_model(model()).network);
  const std::string limit = std::to_string(plan.bytes(2));
  const ProcessResult one = infer({"--batch", "64", "--max-memory", limit});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.err, "");
  const ProcessResult two = infer({"--batch", "64", "--max-memory", limit, kImage});
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.err, "");
  EXPECT_EQ(two.out_lines().size(), 2u);
  const ProcessResult folder = infer({"--batch", "64", "--max-memory", limit}, kSamples);
  EXPECT_EQ(folder.exit_code, 0) << folder.err;
  EXPECT_NE(folder.err.find("running batches of 2"), std::string::npos) << folder.err;
}

TEST_F(MemoryLimit, SizesItAccepts) {
  SCOPED_TRACE(rng_.trace());
  write_model(kTinyToml, tiny_tensors(rng_));
  for (const char* size : {"4G", "4g", "4GiB", "4GB", "4096M", "1.5G", "4294967296", "512k", "1T", "100000B"}) {
    SCOPED_TRACE(size);
    const ProcessResult r = infer({"--max-memory", size});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}

TEST_F(MemoryLimit, SizesItRefusesAreUsageErrors) {
  write_model(kTinyToml, tiny_tensors(rng_));
  for (const char* size : {"4X", "0", "0.5", "1.5.2G", "", "G", "4 G", "4Gi", "4KG", "99999999999T", ".5G",
                           "123456789012345678901234567890"}) {
    SCOPED_TRACE(size);
    const ProcessResult r = infer({"--max-memory", size});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("infer: --max-memory: '" + std::string(size) + "' is not a size", 0), 0u) << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(infer({"--max-memory", "-1"}).exit_code, 2);
}

TEST(MemoryLimitHelp, NamesTheOptionAndItsDefault) {
  const ProcessResult r = run_process(infer_exe(), {"--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("--max-memory SIZE=4G"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace infer::test

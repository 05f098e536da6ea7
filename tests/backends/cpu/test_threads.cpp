// The CPU thread count is the process's (ClassifierOptions::threads, set_cpu_threads): a backend
// run from a thread other than the one that set it uses it too. OpenMP keeps its thread count per
// thread, so oneDNN on a new thread (a server's batch thread) used OpenMP's default instead.
// Without a chosen count, oneDNN's passes run at every core or one thread (thread_choice.h).
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/thread_choice.h"
#include "backends/cpu/threads.h"
#include "tests/support/reference.h"
#include "tests/support/test_util.h"

namespace infer {
namespace {

using test::Random;

// First in this file: the test below sets a count, and gtest runs a file's tests in order in one
// process (ctest runs each alone).
TEST(CpuThreads, WithoutAChosenCountPassesRunAtEveryCoreAndAtOneAndEachMatchesTheReference) {
  if (!onednn_available()) GTEST_SKIP() << "no oneDNN (no OpenMP runtime) in this build";
  if (cpu::openmp_processors() < 2) GTEST_SKIP() << "one processor: there is no other count to choose";
  if (cpu::openmp_threads_chosen()) {
    GTEST_SKIP() << "a thread count was chosen (OMP_NUM_THREADS, or set_threads earlier in this process)";
  }
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = test::random_network(rng, {3, 12, 12}, test::graph_zoo_layers());
  auto backend = make_cpu_backend(net, 1);
  EXPECT_NE(backend->description().find(" or 1, whichever runs faster now"), std::string::npos)
      << backend->description();
  std::set<int> counts;  // the OpenMP count of each pass
  const std::size_t count = net.layers().size();
  for (std::uint64_t pass = 0; pass < cpu::ThreadChoice::kFirstProbe + 4; ++pass) {
    const std::vector<float> input = rng.vector(net.input().dims.size());
    std::vector<float> out(net.output_dims().size(), std::numeric_limits<float>::quiet_NaN());
    const int before = cpu::onednn_threads();
    backend->forward(input.data(), 1, out.data());
    counts.insert(cpu::last_onednn_pass_threads());
    EXPECT_EQ(cpu::onednn_threads(), before) << "a pass left the calling thread at another OpenMP count";
    const test::ReferenceTensor want = test::reference_forward(net, input, 1, count, false).back();
    test::expect_close(out, want.value, test::reference_tolerance(want), "pass " + std::to_string(pass));
  }
  EXPECT_EQ(counts, (std::set<int>{1, cpu::openmp_processors()}));
}

TEST(CpuThreads, TheCountSetHoldsOnEveryThreadThatRunsTheBackend) {
  if (!onednn_available()) GTEST_SKIP() << "no oneDNN (no OpenMP runtime) in this build";
  Random rng;
  SCOPED_TRACE(rng.trace());
  const Network net = test::random_network(rng, {2, 6, 6}, {test::conv_layer("c", 3, 3, 1, 1)});
  auto backend = make_cpu_backend(net, 2);
  int fresh = 0;  // a new thread's count before any is set: OpenMP's default
  std::thread([&] { fresh = cpu::onednn_threads(); }).join();
  const int wanted = fresh + 1;  // differs from the default on any machine
  cpu::set_threads(wanted);
  int seen = 0;
  std::thread([&] {
    const std::vector<float> in = rng.vector(2 * 72);
    std::vector<float> out(2 * 108);
    backend->forward(in.data(), 2, out.data());
    seen = cpu::last_onednn_pass_threads();  // the count the pass ran at
  }).join();
  cpu::set_threads(fresh);
  EXPECT_EQ(seen, wanted) << "oneDNN ran with OpenMP's default on a thread that did not set the count";
}

}  // namespace
}  // namespace infer

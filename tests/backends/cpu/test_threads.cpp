// The CPU thread count is the process's (ClassifierOptions::threads, set_cpu_threads): a backend
// run from a thread other than the one that set it uses it too. OpenMP keeps its thread count per
// thread, so oneDNN on a new thread (a server's batch thread) used OpenMP's default instead.
#include <thread>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/threads.h"
#include "tests/support/test_util.h"

namespace infer {
namespace {

using test::Random;

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
    seen = cpu::onednn_threads();
  }).join();
  cpu::set_threads(fresh);
  EXPECT_EQ(seen, wanted) << "oneDNN ran with OpenMP's default on a thread that did not set the count";
}

}  // namespace
}  // namespace infer

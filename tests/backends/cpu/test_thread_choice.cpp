// The oneDNN backend's per-pass choice between every core and one thread (thread_choice.h), with
// made-up pass times: what it runs first, when it times the other count, and how it follows a
// machine that gets busy and idle again.
#include "backends/cpu/thread_choice.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace infer::cpu {
namespace {

constexpr int kMany = 4;

// Runs `passes` passes, each taking time_of(count) seconds; returns the counts run, in order.
std::vector<int> run(ThreadChoice& choice, int passes, const std::function<double(int)>& time_of) {
  std::vector<int> counts;
  for (int i = 0; i < passes; ++i) {
    const int count = choice.next();
    counts.push_back(count);
    choice.record(time_of(count));
  }
  return counts;
}

int ones(const std::vector<int>& counts) {
  int n = 0;
  for (int c : counts) n += c == 1;
  return n;
}

TEST(ThreadChoice, TheFirstPassesRunEveryCoreAndNeverBuildTheOtherProgram) {
  ThreadChoice choice(kMany);
  const std::vector<int> counts = run(choice, static_cast<int>(ThreadChoice::kFirstProbe), [](int) { return 1.0; });
  for (int c : counts) EXPECT_EQ(c, kMany);
}

TEST(ThreadChoice, OneThreadIsTimedTwiceAfterTheFirstPassesItsWarmUpNotCounted) {
  ThreadChoice choice(kMany);
  // One thread's first pass (the warm-up) is very slow; were it counted, every core would win.
  int one_runs = 0;
  auto time_of = [&](int c) { return c == kMany ? 1.0 : (one_runs++ == 0 ? 100.0 : 0.5); };
  const std::vector<int> counts = run(choice, static_cast<int>(ThreadChoice::kFirstProbe) + 3, time_of);
  const std::size_t first = ThreadChoice::kFirstProbe;
  EXPECT_EQ(counts[first], 1);
  EXPECT_EQ(counts[first + 1], 1) << "the warm-up alone timed one thread";
  EXPECT_EQ(choice.preferred(), 1);
  EXPECT_EQ(counts[first + 2], 1);
}

TEST(ThreadChoice, OnAnIdleMachineEveryCoreRunsAllButOnePassInKProbeEvery) {
  ThreadChoice choice(kMany);
  const int passes = 10 * static_cast<int>(ThreadChoice::kProbeEvery);
  const std::vector<int> counts = run(choice, passes, [](int c) { return c == kMany ? 1.0 : 3.0; });
  EXPECT_EQ(choice.preferred(), kMany);
  // Two first probes (warm-up and time), then one every kProbeEvery passes.
  const int expected =
      2 + (passes - static_cast<int>(ThreadChoice::kFirstProbe) - 2) / static_cast<int>(ThreadChoice::kProbeEvery);
  EXPECT_LE(ones(counts), expected + 1);
  EXPECT_GE(ones(counts), expected - 1);
}

TEST(ThreadChoice, FollowsTheMachineFromIdleToBusyAndBack) {
  ThreadChoice choice(kMany);
  bool busy = false;
  // Idle: every core 1 s, one thread 2 s. Busy (a job on one core): every core 4 s, one thread 2 s.
  auto time_of = [&](int c) { return c == 1 ? 2.0 : (busy ? 4.0 : 1.0); };
  const int window = 3 * static_cast<int>(ThreadChoice::kProbeEvery);
  run(choice, window, time_of);
  EXPECT_EQ(choice.preferred(), kMany);
  busy = true;
  std::vector<int> counts = run(choice, window, time_of);
  EXPECT_EQ(choice.preferred(), 1) << "still every core after " << window << " busy passes";
  // Within one probe period and the running average's catching up, one thread runs.
  EXPECT_GE(ones(counts), window - static_cast<int>(ThreadChoice::kProbeEvery) - 8);
  busy = false;
  counts = run(choice, window, time_of);
  EXPECT_EQ(choice.preferred(), kMany) << "still one thread after " << window << " idle passes";
  EXPECT_LE(ones(counts), static_cast<int>(ThreadChoice::kProbeEvery) + 4);
}

TEST(ThreadChoice, ASlowProbeOfTheBetterCountCostsOnlyUntilTheNextProbe) {
  ThreadChoice choice(kMany);
  int pass = 0;
  // Every core is faster, but one of its passes (a moment of load) takes 10 s.
  auto time_of = [&](int c) {
    ++pass;
    if (c == 1) return 2.0;
    return pass == 60 ? 10.0 : 1.0;
  };
  const std::vector<int> counts = run(choice, 60 + 2 * static_cast<int>(ThreadChoice::kProbeEvery) + 2, time_of);
  EXPECT_EQ(choice.preferred(), kMany);
  EXPECT_EQ(counts.back(), kMany);
}

}  // namespace
}  // namespace infer::cpu

// The oneDNN backend's thread count when nobody chose one (no --threads, no OMP_NUM_THREADS): every
// core is fastest on an idle machine, and one thread is fastest when another job keeps a core busy
// (OpenMP's threads wait for the slowest, which shares its core). So each program size keeps both,
// runs the one whose recent passes were faster, and times the other again every kProbeEvery passes
// to notice when the machine changes. On a 2-core machine with a busy loop on one core, ResNet-18
// at batch 1 took twice its idle time on both cores and less than its idle time on one
// (tools/bench/bench.sh --contention; bench/RESULTS.md).
//
// Pure bookkeeping, no clock and no threads: the caller times each pass and reports it, so that the
// policy is tested with made-up times (tests/backends/cpu/test_thread_choice.cpp).
#pragma once

#include <array>
#include <cstdint>

namespace infer::cpu {

class ThreadChoice {
 public:
  // Passes between two probes of the slower count: a probe that loses costs one slow pass in this
  // many (ResNet-18 one-threaded on an idle 2-core machine: about 3% on the mean, none on the median).
  static constexpr std::uint64_t kProbeEvery = 32;
  // The first probe of one thread comes after this many passes, so that a single image (the first
  // result, `infer photo.jpg`) never waits for a second program to be built.
  static constexpr std::uint64_t kFirstProbe = 3;

  // Chooses between `many` (every core, > 1) and 1 thread.
  explicit ThreadChoice(int many) : counts_{many, 1} {}

  // The thread count for the next pass.
  int next();
  // The time of a pass run with next()'s count. The first pass of each count is not counted (a new
  // program's first pass touches its memory and code for the first time).
  void record(double seconds);

  // The count the policy prefers now (the faster estimate; every core until one thread is timed).
  int preferred() const { return counts_[best()]; }

 private:
  int best() const;

  std::array<int, 2> counts_;
  std::array<double, 2> estimate_{-1.0, -1.0};  // seconds per pass; negative: not timed yet
  std::array<std::uint64_t, 2> runs_{0, 0};
  std::uint64_t passes_ = 0;
  std::uint64_t last_probe_ = 0;
  int running_ = 0;  // the index next() chose
};

}  // namespace infer::cpu

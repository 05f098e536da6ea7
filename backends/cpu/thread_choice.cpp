#include "backends/cpu/thread_choice.h"

namespace infer::cpu {

int ThreadChoice::best() const {
  if (estimate_[1] < 0.0) return 0;
  if (estimate_[0] < 0.0) return 1;
  return estimate_[1] < estimate_[0] ? 1 : 0;
}

int ThreadChoice::next() {
  ++passes_;
  const int best_now = best(), other = 1 - best_now;
  running_ = best_now;
  // The other count is timed when it never was (after kFirstProbe passes, or again at once when its
  // first run was only a warm-up), and then every kProbeEvery passes.
  const bool untimed = estimate_[other] < 0.0;
  if ((untimed && passes_ > kFirstProbe) || (!untimed && passes_ - last_probe_ >= kProbeEvery)) {
    running_ = other;
    last_probe_ = passes_;
  }
  return counts_[running_];
}

void ThreadChoice::record(double seconds) {
  const int i = running_;
  if (runs_[i]++ == 0) return;  // the warm-up
  if (estimate_[i] < 0.0 || i != best()) {
    // A probe's time replaces the old one, which may date from another load on the machine.
    estimate_[i] = seconds;
  } else {
    estimate_[i] += 0.25 * (seconds - estimate_[i]);  // the running count: the recent passes
  }
}

}  // namespace infer::cpu

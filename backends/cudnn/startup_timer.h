// Where building an executor spends its time (Backend::startup_phases): the host's wall clock
// between marks. mark() ends the phase under way and starts the next, so that the phases cover the
// build without gaps; it returns nothing, to be used before an expression in a member initialiser.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"

namespace infer::cudnn {

class StartupTimer {
 public:
  StartupTimer() : last_(Clock::now()) {}

  void mark(std::string name) {
    const Clock::time_point now = Clock::now();
    phases_.push_back(StartupPhase{std::move(name), std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }
  const std::vector<StartupPhase>& phases() const { return phases_; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_;
  std::vector<StartupPhase> phases_;
};

}  // namespace infer::cudnn

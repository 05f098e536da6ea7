#include "app/progress.h"

#ifdef _WIN32
#include <io.h>
#else
#include <unistd.h>
#endif

#include <cstdio>
#include <ostream>

namespace infer::app {

bool stderr_is_terminal() {
#ifdef _WIN32
  return _isatty(_fileno(stderr)) != 0;
#else
  return isatty(STDERR_FILENO) == 1;
#endif
}

Progress::Progress(std::ostream& err, std::size_t total, bool enabled, std::chrono::milliseconds delay)
    : err_(err), total_(total), enabled_(enabled), delay_(delay) {}

Progress::~Progress() {
  try {
    finish();
  } catch (...) {  // a destructor must not throw; a stderr that fails is not worth an error
  }
}

void Progress::update(std::size_t done) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < delay_ || (shown_ && now - last_ < std::chrono::milliseconds(100))) return;
  last_ = now;
  draw(done);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (!ever_shown_) return;
  draw(total_);
  err_ << '\n' << std::flush;
  shown_ = false;
}

void Progress::clear() {
  if (shown_) err_ << "\r\033[K";
  shown_ = false;
}

void Progress::draw(std::size_t done) {
  shown_ = ever_shown_ = true;
  err_ << "\rinfer: " << done << '/' << total_ << " images" << std::flush;
}

}  // namespace infer::app

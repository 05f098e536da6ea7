// "infer: 1200/10000 images" on stderr, rewritten in place with \r while a long run goes on.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>

namespace infer::app {

// Whether the process's stderr is a terminal (a console on Windows): where a progress line belongs.
bool stderr_is_terminal();

class Progress {
 public:
  // Shown only when `enabled` (stderr is a terminal) and the run has taken longer than `delay`; at
  // most ten updates a second.
  Progress(std::ostream& err, std::size_t total, bool enabled,
           std::chrono::milliseconds delay = std::chrono::seconds(1));
  // Ends a shown line: the final count, then a newline.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(std::size_t done);
  // The run is over: a shown line says total/total.
  void finish();
  // Erases a shown line, so that another stderr line starts on a clean one; the next update redraws it.
  void clear();

 private:
  void draw(std::size_t done);

  std::ostream& err_;
  std::size_t total_;
  bool enabled_;
  bool shown_ = false;  // the line is on the terminal now
  bool ever_shown_ = false;
  bool finished_ = false;
  std::chrono::milliseconds delay_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_;
};

}  // namespace infer::app

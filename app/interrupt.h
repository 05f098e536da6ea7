// Whole lines when a run is interrupted (SIGINT, SIGTERM, SIGHUP; Ctrl+C, Ctrl+Break and closing the
// console on Windows). A signal that arrives while a WholeOutput is alive waits until it ends, so
// the line being written is finished and flushed, and a file being replaced (--output, --nfd,
// --write-manifest) is renamed or removed; then the process ends by that signal (exit status
// 128 + N in a shell). A signal at any other moment ends the process at once: what was written
// before it is whole lines only, since every line is written inside a WholeOutput. A line that
// cannot be finished within 2 s (a reader that stopped reading) is not waited for longer.
#pragma once

namespace infer::app {

// Installs the handlers; a signal the process was started with ignored (nohup's SIGHUP, a
// background job's SIGINT) stays ignored. Once per process, before any output; not for `serve`,
// which drains on its own signals.
void end_runs_on_whole_lines();

// A section of output that a signal does not cut: at most one at a time, on the main thread.
class WholeOutput {
 public:
  WholeOutput();
  ~WholeOutput();
  WholeOutput(const WholeOutput&) = delete;
  WholeOutput& operator=(const WholeOutput&) = delete;
};

}  // namespace infer::app

// Whole lines on Ctrl+C, Ctrl+Break and closing the console (interrupt.h), on Windows. The console
// runs the handler on a thread of its own, which may wait: it waits (at most 2 s) for the line
// being written, then ends the process with 128 + 2, the exit status a POSIX shell shows for SIGINT
// (the handlers' WholeOutput sections are the same as on Linux).
#include "app/interrupt.h"

#include <windows.h>

#include <atomic>

namespace infer::app {
namespace {

enum State : int { kIdle = 0, kWriting = 1, kEnding = 2 };
std::atomic<int> g_state{kIdle};

constexpr DWORD kLineDeadlineMs = 2000;
constexpr UINT kExitInterrupted = 128 + 2;

BOOL WINAPI on_console_event(DWORD event) {
  if (event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT && event != CTRL_CLOSE_EVENT) return FALSE;
  for (DWORD waited = 0;; waited += 10) {
    int idle = kIdle;
    if (g_state.compare_exchange_strong(idle, kEnding) || waited >= kLineDeadlineMs) break;
    Sleep(10);
  }
  g_state.store(kEnding);
  ExitProcess(kExitInterrupted);
}

}  // namespace

void end_runs_on_whole_lines() { SetConsoleCtrlHandler(on_console_event, TRUE); }

WholeOutput::WholeOutput() {
  for (int idle = kIdle; !g_state.compare_exchange_weak(idle, kWriting); idle = kIdle) {
    if (idle == kEnding) {
      for (;;) Sleep(INFINITE);  // the handler is ending the process
    }
  }
}

WholeOutput::~WholeOutput() { g_state.store(kIdle); }

}  // namespace infer::app

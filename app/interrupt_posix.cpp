// Whole lines on SIGINT, SIGTERM and SIGHUP (interrupt.h), with POSIX signals. The main thread and
// the handler (on whichever thread the kernel picks: OpenMP's workers do not block signals) agree
// through one lock-free atomic: idle, writing (a WholeOutput is alive) or ending. The handler ends
// the process only from idle; a writer that finds a signal pending when it leaves ends it then.
//
// What runs in the handlers is async-signal-safe, and stays so under AddressSanitizer: its
// instrumentation would call __asan_handle_no_return before the [[noreturn]] end_by, which
// unpoisons the stack there. On a signal that landed in oneDNN's JIT code that reported a false
// heap overflow on the handler's own frame; and on an alternate signal stack it reads the thread's
// stack bounds through pthread_getattr_np, which allocates, so a signal landing inside malloc
// deadlocked on the allocator's lock. So the handlers are not instrumented.
#include "app/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace infer::app {
namespace {

enum State : int { kIdle = 0, kWriting = 1, kEnding = 2 };
std::atomic<int> g_state{kIdle};
std::atomic<int> g_pending{0};  // the signal that arrived while writing
static_assert(std::atomic<int>::is_always_lock_free, "the handler needs a lock-free atomic");

constexpr unsigned kLineDeadlineSeconds = 2;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

#if defined(__GNUC__) || defined(__clang__)
#define INFER_SIGNAL_HANDLER __attribute__((no_sanitize("address")))
#else
#define INFER_SIGNAL_HANDLER
#endif

// Ends the process by `sig` with its default action, so the parent sees that signal; the handler
// runs with SA_NODEFER, so the signal is not blocked and raise() delivers it here and now.
[[noreturn]] INFER_SIGNAL_HANDLER void end_by(int sig) {
  signal(sig, SIG_DFL);
  raise(sig);
  _exit(128 + sig);  // only if the signal was blocked after all
}

INFER_SIGNAL_HANDLER void on_stop_signal(int sig) {
  const int saved_errno = errno;
  g_pending.store(sig);
  int idle = kIdle;
  if (g_state.compare_exchange_strong(idle, kEnding)) end_by(sig);
  alarm(kLineDeadlineSeconds);  // the writer finishes its line, or on_alarm ends the process anyway
  errno = saved_errno;
}

INFER_SIGNAL_HANDLER void on_alarm(int) {
  g_state.store(kEnding);
  const int sig = g_pending.load();
  end_by(sig != 0 ? sig : SIGALRM);
}

void install(int sig, void (*handler)(int)) {
  struct sigaction old {};
  if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) return;  // ignored by who started us
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  // SA_RESTART: a write that the handler interrupts before it wrote anything is restarted, not
  // failed with EINTR; one that wrote part of a line returns the count and the stream writes the rest.
  sa.sa_flags = SA_RESTART | SA_NODEFER;
  sigaction(sig, &sa, nullptr);
}

}  // namespace

void end_runs_on_whole_lines() {
  for (const int sig : kSignals) install(sig, on_stop_signal);
  install(SIGALRM, on_alarm);
}

WholeOutput::WholeOutput() {
  for (int idle = kIdle; !g_state.compare_exchange_weak(idle, kWriting); idle = kIdle) {
    if (idle == kEnding) {
      for (;;) pause();  // a handler is ending the process on another thread
    }
  }
}

WholeOutput::~WholeOutput() {
  g_state.store(kIdle);
  if (const int sig = g_pending.load()) {
    int idle = kIdle;
    if (g_state.compare_exchange_strong(idle, kEnding)) end_by(sig);
  }
}

}  // namespace infer::app

// Runs code that touches libraries this project did not build (NVIDIA's, or whatever file carries
// their name) in a child process with a deadline, so that a library that crashes, hangs, calls
// exit() or prints while it is loaded cannot take the caller down or write around its output.
//
// On Linux (isolated.cpp) the child is a fork() of the caller; on Windows (isolated_windows.cpp)
// it is the program started again with a job name (below). On Linux: it runs `body` and sends text records back through a pipe;
// its stdout and stderr are captured line by line. A fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE) is
// attributed to the mapped file that holds the faulting address, read from /proc/self/maps by an
// async-signal-safe handler in the child.
//
// Call from one thread at a time, and only while the caller's other threads (if any) hold no locks
// the body needs (an idle thread pool is fine): after fork() only the calling thread exists in the
// child. Buffered C stdio output of the caller is flushed before the fork so it is not written twice.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace infer {

// What the body writes through. Keys and values are one line each (newlines are escaped).
class ChildChannel {
 public:
  explicit ChildChannel(int fd) : fd_(fd) {}
  // What the child is about to do ("dlopen libcudnn.so.9"): a crash or hang is reported against
  // the last step.
  void step(const std::string& what) const { put("step", what); }
  void put(const std::string& key, const std::string& value) const;

 private:
  int fd_;
};

struct IsolatedResult {
  enum class End { Finished, Exited, Signalled, TimedOut, NotStarted };
  End end = End::NotStarted;
  int exit_code = 0;                                         // End::Exited: the status passed to exit()
  int signal = 0;  // End::Signalled: the signal; on Windows the exception code (0xC0000005)
  std::string fault_file;                                    // the file holding the faulting address, when known
  std::string step;                                          // the last step the child announced
  std::vector<std::pair<std::string, std::string>> records;  // in the order sent, steps excluded
  std::vector<std::string> output;                           // lines the child printed on stdout or stderr
  std::string start_error;                                   // End::NotStarted: why (pipe or fork failed)
  long timeout_ms = 0;                                       // the deadline it ran under

  bool finished() const { return end == End::Finished; }
  // The last value sent for key, or "" (has() tells the two apart).
  std::string value(const std::string& key) const;
  bool has(const std::string& key) const;
  // The last value sent for key as a whole decimal number; nullopt when absent or not one.
  std::optional<long long> number(const std::string& key) const;
  // One line for a child that did not finish: "crashed with SIGBUS (bus error) in /x/libcudnn.so.9
  // while dlopen libcudnn.so.9", "did not finish within 10 s while cuInit", "called exit(3) while ...".
  std::string failure() const;
};

#ifdef _WIN32
// Windows has no fork(): a child is this program started again as
//   "<this .exe>" --infer-probe-child <record handle> <job> <args...>
// and runs a job found by name. Its main() must call run_child_if_asked() first. A crash is an
// exception code (0xC0000005 ...) as exit status, attributed to the module holding the faulting
// address by an unhandled-exception filter in the child.
struct ChildCall {
  std::string job;
  std::vector<std::string> args;  // UTF-8
};
using ChildJob = void (*)(const ChildChannel&, const std::vector<std::string>& args);
using ChildJobFinder = ChildJob (*)(const std::string& name);  // nullptr for an unknown name

// Runs each call in its own child, all at once, and waits for every one (at most `timeout` from
// the start; a child still running then is terminated). Results are in the order of `calls`.
std::vector<IsolatedResult> run_isolated(const std::vector<ChildCall>& calls, std::chrono::milliseconds timeout);
// When this process was started as a child (argv[1] is --infer-probe-child): runs the job and
// ends the process; never returns then. Otherwise returns at once.
void run_child_if_asked(int argc, wchar_t** argv, ChildJobFinder find);
#else
using ChildBody = std::function<void(const ChildChannel&)>;

// Runs each body in its own child, all at once, and waits for every one (at most `timeout` from
// the start; a child still running then is killed). Results are in the order of `bodies`.
std::vector<IsolatedResult> run_isolated(const std::vector<ChildBody>& bodies, std::chrono::milliseconds timeout);
IsolatedResult run_isolated(const ChildBody& body, std::chrono::milliseconds timeout);
#endif

// The deadline for probing libraries: INFER_PROBE_TIMEOUT_MS when set to a positive number (tests
// of hanging libraries shorten it), else 10 s (cuInit on a machine with many GPUs can take seconds).
std::chrono::milliseconds probe_timeout();

}  // namespace infer

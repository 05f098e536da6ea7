#include "platform/isolated.h"

#include "platform/isolated_records.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

namespace infer {
namespace {

// ---- The child: its fault handler may use only async-signal-safe calls (open, read, write). ----

int g_record_fd = -1;

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

std::uintptr_t parse_hex(const char*& p) {
  std::uintptr_t v = 0;
  for (;; ++p) {
    const char c = *p;
    if (c >= '0' && c <= '9')
      v = v * 16 + static_cast<std::uintptr_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v = v * 16 + static_cast<std::uintptr_t>(c - 'a' + 10);
    else
      return v;
  }
}

// If `line` ("start-end perms offset dev inode  /path") maps `addr` from a file, writes the record
// "fault\t/path\n" and returns true.
bool report_if_mapped(const char* line, std::uintptr_t addr) {
  const char* p = line;
  const std::uintptr_t start = parse_hex(p);
  if (*p != '-') return false;
  ++p;
  const std::uintptr_t end = parse_hex(p);
  if (addr < start || addr >= end) return false;
  const char* path = std::strchr(p, '/');
  if (!path) return false;
  write_all(g_record_fd, "fault\t", 6);
  write_all(g_record_fd, path, std::strlen(path));
  write_all(g_record_fd, "\n", 1);
  return true;
}

bool report_mapping(std::uintptr_t addr) {
  const int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  static char chunk[4096];
  static char line[1024];
  std::size_t used = 0;
  bool found = false;
  for (ssize_t n; !found && (n = read(fd, chunk, sizeof chunk)) > 0;) {
    for (ssize_t i = 0; i < n && !found; ++i) {
      if (chunk[i] != '\n') {
        if (used + 1 < sizeof line) line[used++] = chunk[i];
        continue;
      }
      line[used] = '\0';
      found = report_if_mapped(line, addr);
      used = 0;
    }
  }
  close(fd);
  return found;
}

std::uintptr_t instruction_pointer(void* context) {
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

// Names the file holding the faulting data address (a truncated library mapped past its end), else
// the one holding the faulting instruction. SA_RESETHAND has restored the default action, so the
// instruction faults again on return and the child dies of the signal, which the parent sees.
void on_fault(int, siginfo_t* info, void* context) {
  if (!report_mapping(reinterpret_cast<std::uintptr_t>(info->si_addr))) report_mapping(instruction_pointer(context));
}

void install_fault_handlers() {
  static char alternate_stack[64 * 1024];  // a stack overflow in a library still gets reported
  stack_t ss{};
  ss.ss_sp = alternate_stack;
  ss.ss_size = sizeof alternate_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) sigaction(sig, &sa, nullptr);
}

[[noreturn]] void run_child(const ChildBody& body, int record_fd, int output_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the caller
  g_record_fd = record_fd;
  dup2(output_fd, STDOUT_FILENO);
  dup2(output_fd, STDERR_FILENO);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGALRM, SIGPIPE, SIGABRT})
    signal(sig, SIG_DFL);  // not the caller's handlers
  install_fault_handlers();
  const ChildChannel channel(record_fd);
  try {
    body(channel);
  } catch (const std::exception& e) {
    channel.put("error", e.what());
  } catch (...) {
    channel.put("error", "unknown exception");
  }
  std::fflush(nullptr);
  channel.put("done", "");  // tells a normal end from a library's own exit(0)
  _exit(0);
}

// ---- The parent. ----

using detail::escape;
using detail::output_lines;
using detail::parse_records;

struct Child {
  pid_t pid = -1;
  int record_fd = -1, output_fd = -1;
  std::string records, output;
  bool reaped = false;
};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGSYS: return "SIGSYS";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    default: return nullptr;
  }
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Reads what is available on one of the child's pipes; closes it at end of file.
void drain(int& fd, std::string& into) {
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf);
  if (n > 0) {
    if (into.size() < (1u << 20)) into.append(buf, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close_fd(fd);
  }
}

bool start_child(const ChildBody& body, Child& c, std::string& error) {
  int records[2], output[2];
  if (pipe2(records, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (pipe2(output, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    close(records[0]), close(records[1]);
    return false;
  }
  std::fflush(nullptr);
  c.pid = fork();
  if (c.pid == 0) {
    close(records[0]), close(output[0]);
    run_child(body, records[1], output[1]);
  }
  close(records[1]), close(output[1]);
  if (c.pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    close(records[0]), close(output[0]);
    return false;
  }
  c.record_fd = records[0];
  c.output_fd = output[0];
  return true;
}

}  // namespace

void ChildChannel::put(const std::string& key, const std::string& value) const {
  const std::string line = key + '\t' + escape(value) + '\n';
  write_all(fd_, line.data(), line.size());
}

std::string detail::crash_text(int signal) {
  const char* name = signal_name(signal);
  std::string s = std::string("crashed with ") + (name ? name : "signal " + std::to_string(signal));
  if (const char* text = strsignal(signal)) s += std::string(" (") + text + ")";
  return s;
}

std::vector<IsolatedResult> run_isolated(const std::vector<ChildBody>& bodies, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  std::vector<IsolatedResult> results(bodies.size());
  for (IsolatedResult& r : results) r.timeout_ms = static_cast<long>(timeout.count());
  std::vector<Child> children(bodies.size());
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    if (!start_child(bodies[i], children[i], results[i].start_error)) results[i].end = IsolatedResult::End::NotStarted;
  }
  // Read every pipe until each child has closed both, or the deadline.
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<std::size_t, bool>> owner;  // child index, is the record pipe
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (children[i].record_fd >= 0) fds.push_back({children[i].record_fd, POLLIN, 0}), owner.emplace_back(i, true);
      if (children[i].output_fd >= 0) fds.push_back({children[i].output_fd, POLLIN, 0}), owner.emplace_back(i, false);
    }
    if (fds.empty()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    const int n = poll(fds.data(), fds.size(), static_cast<int>(left));
    if (n < 0 && errno != EINTR) break;
    for (std::size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Child& c = children[owner[k].first];
      if (owner[k].second)
        drain(c.record_fd, c.records);
      else
        drain(c.output_fd, c.output);
    }
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    Child& c = children[i];
    IsolatedResult& r = results[i];
    if (c.pid <= 0) continue;
    // A child that closed its pipes is about to exit; one that is still running at the deadline
    // (or that handed its pipes to a process of its own) is stopped.
    close_fd(c.output_fd);
    parse_records(c.records, r);
    r.output = output_lines(c.output);
    int status = 0;
    pid_t done = 0;
    while ((done = waitpid(c.pid, &status, WNOHANG)) == 0 && Clock::now() < deadline) usleep(1000);
    if (done == 0) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &status, 0);
      r.end = IsolatedResult::End::TimedOut;
    } else if (WIFSIGNALED(status)) {
      r.end = IsolatedResult::End::Signalled;
      r.signal = WTERMSIG(status);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      r.end = IsolatedResult::End::Exited;
      r.exit_code = WEXITSTATUS(status);
    } else if (!r.has("done")) {
      r.end = IsolatedResult::End::Exited;  // exit(0) from inside a library, before the body ended
    } else {
      r.end = IsolatedResult::End::Finished;
    }
    close_fd(c.record_fd);
  }
  return results;
}

IsolatedResult run_isolated(const ChildBody& body, std::chrono::milliseconds timeout) {
  return run_isolated(std::vector<ChildBody>{body}, timeout).front();
}

}  // namespace infer

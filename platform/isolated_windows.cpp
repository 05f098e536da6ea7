// run_isolated() on Windows: each call is this program started again with CreateProcessW, its
// job name and a records pipe; its stdout and stderr go to a second pipe. Nothing a probed library
// starts can keep the caller waiting past the deadline (issue 31: a cudnnGetVersion that started a
// helper with bInheritHandles=TRUE held --check for the helper's whole life, through the pipes it
// inherited):
// - each child inherits its two pipe write ends and nothing else (STARTUPINFOEX with
//   PROC_THREAD_ATTRIBUTE_HANDLE_LIST; children are started one after another from the calling
//   thread, and the write ends are closed here once the child holds them), and the child makes
//   them non-inheritable at once, so a process it starts inherits neither;
// - each child runs in a job object of its own (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE): the processes
//   it starts join the job, and the job is ended when the child has ended or was stopped;
// - one thread per pipe reads until end of file or until told to stop, never blocking in ReadFile
//   (PeekNamedPipe first): once the child has ended, what is in the pipe is read and the rest,
//   from a process that escaped the job, is not waited for.
// The calling thread waits for each process up to the shared deadline and terminates what is left.
#include <windows.h>

#include <fcntl.h>
#include <io.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "platform/isolated.h"
#include "platform/isolated_records.h"
#include "platform/windows_message.h"

namespace infer {
namespace {

namespace fs = std::filesystem;

constexpr wchar_t kChildFlag[] = L"--infer-probe-child";
// Ends a child that the deadline stopped: not an exception code, so not read as a crash.
constexpr UINT kTerminatedExitCode = 0x7F000001;

// ---- The child. ----

HANDLE g_record_handle = INVALID_HANDLE_VALUE;

// Writes without the heap: the filter below runs after a fault, when the heap may be damaged.
void write_raw(const char* p, DWORD n) {
  DWORD written = 0;
  while (n > 0 && WriteFile(g_record_handle, p, n, &written, nullptr) && written > 0) {
    p += written;
    n -= written;
  }
}

// Names the module holding the faulting address, then lets the process end with the exception
// code as its exit status (what the parent reads).
LONG WINAPI on_unhandled_exception(EXCEPTION_POINTERS* info) {
  HMODULE module = nullptr;
  wchar_t wide[MAX_PATH];
  char utf8[MAX_PATH * 3];
  if (info && info->ExceptionRecord &&
      GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                         static_cast<LPCWSTR>(info->ExceptionRecord->ExceptionAddress), &module)) {
    const DWORD n = GetModuleFileNameW(module, wide, MAX_PATH);
    const int m =
        n ? WideCharToMultiByte(CP_UTF8, 0, wide, static_cast<int>(n), utf8, sizeof utf8, nullptr, nullptr) : 0;
    if (m > 0) {
      write_raw("fault\t", 6);
      for (int i = 0; i < m; ++i) {  // escaped as the record format wants
        if (utf8[i] == '\\')
          write_raw("\\\\", 2);
        else if (utf8[i] != '\n' && utf8[i] != '\t')
          write_raw(&utf8[i], 1);
      }
      write_raw("\n", 1);
    }
  }
  TerminateProcess(GetCurrentProcess(), info && info->ExceptionRecord ? info->ExceptionRecord->ExceptionCode : 1);
  return EXCEPTION_EXECUTE_HANDLER;
}

std::string utf8(const wchar_t* w) { return utf8_from_utf16(w); }

// ---- The parent. ----

struct Handle {
  HANDLE h = nullptr;
  Handle() = default;
  explicit Handle(HANDLE handle) : h(handle) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  void reset() {
    if (h && h != INVALID_HANDLE_VALUE) CloseHandle(h);
    h = nullptr;
  }
};

struct Child {
  Handle process, job;
  Handle record_read, output_read;
  std::string records, output;
  std::atomic<bool> stop_reading{false};  // set once the child and its job have ended
  std::thread record_reader, output_reader;
};

std::string last_error_text(const char* call) {
  return std::string(call) + " failed (Windows error " + std::to_string(GetLastError()) + ")";
}

// Reads the pipe `h` until end of file, or until `stop` is set and nothing is left in it. Never
// blocks in ReadFile: a process outside the child's job that holds a write end cannot hold this.
void read_until_closed_or_stopped(HANDLE h, std::string* into, const std::atomic<bool>* stop) {
  char buf[4096];
  for (;;) {
    const bool stopping = stop->load();  // read before the pipe: what was written before it is seen
    DWORD available = 0;
    if (!PeekNamedPipe(h, nullptr, 0, nullptr, &available, nullptr)) return;  // every write end closed
    if (available == 0) {
      if (stopping) return;
      Sleep(1);
      continue;
    }
    DWORD n = 0;
    if (!ReadFile(h, buf, std::min<DWORD>(available, sizeof buf), &n, nullptr) || n == 0) return;
    if (into->size() < (1u << 20)) into->append(buf, n);
  }
}

// A job whose processes all end when its last handle is closed; nullptr when Windows refuses one.
HANDLE make_kill_on_close_job() {
  HANDLE job = CreateJobObjectW(nullptr, nullptr);
  if (!job) return nullptr;
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits)) {
    CloseHandle(job);
    return nullptr;
  }
  return job;
}

// The attribute list that limits what a child inherits to `handles`; empty when Windows has none.
class InheritOnly {
 public:
  explicit InheritOnly(std::vector<HANDLE> handles) : handles_(std::move(handles)) {
    SIZE_T size = 0;
    InitializeProcThreadAttributeList(nullptr, 1, 0, &size);
    storage_.resize(size);
    auto* list = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(storage_.data());
    if (size == 0 || !InitializeProcThreadAttributeList(list, 1, 0, &size)) return;
    if (!UpdateProcThreadAttribute(list, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, handles_.data(),
                                   handles_.size() * sizeof(HANDLE), nullptr, nullptr)) {
      DeleteProcThreadAttributeList(list);
      return;
    }
    list_ = list;
  }
  InheritOnly(const InheritOnly&) = delete;
  InheritOnly& operator=(const InheritOnly&) = delete;
  ~InheritOnly() {
    if (list_) DeleteProcThreadAttributeList(list_);
  }
  LPPROC_THREAD_ATTRIBUTE_LIST list() const { return list_; }

 private:
  std::vector<HANDLE> handles_;  // the list points into this
  std::vector<char> storage_;
  LPPROC_THREAD_ATTRIBUTE_LIST list_ = nullptr;
};

// A pipe whose write end is inheritable and whose read end is not.
bool make_pipe(Handle& read, Handle& write, std::string& error) {
  SECURITY_ATTRIBUTES sa{sizeof sa, nullptr, TRUE};
  HANDLE r = nullptr, w = nullptr;
  if (!CreatePipe(&r, &w, &sa, 0)) {
    error = last_error_text("CreatePipe");
    return false;
  }
  read.h = r;
  write.h = w;
  SetHandleInformation(r, HANDLE_FLAG_INHERIT, 0);
  return true;
}

// One argument quoted as CommandLineToArgvW reads it back.
std::wstring quoted_arg(const std::wstring& arg) {
  std::wstring out = L"\"";
  std::size_t backslashes = 0;
  for (const wchar_t c : arg) {
    if (c == L'\\') {
      ++backslashes;
      continue;
    }
    out.append(c == L'"' ? backslashes * 2 + 1 : backslashes, L'\\');
    backslashes = 0;
    out += c;
  }
  out.append(backslashes * 2, L'\\');
  return out + L"\"";
}

bool start_child(const ChildCall& call, Child& c, std::string& error) {
  std::wstring exe(32768, L'\0');
  const DWORD n = GetModuleFileNameW(nullptr, exe.data(), static_cast<DWORD>(exe.size()));
  if (n == 0 || n >= exe.size()) {
    error = last_error_text("GetModuleFileNameW");
    return false;
  }
  exe.resize(n);
  Handle record_write, output_write;
  if (!make_pipe(c.record_read, record_write, error) || !make_pipe(c.output_read, output_write, error)) return false;
  std::wstring line = quoted_arg(exe) + L" " + kChildFlag + L" " +
                      std::to_wstring(reinterpret_cast<std::uintptr_t>(record_write.h)) + L" " +
                      quoted_arg(fs::u8path(call.job).wstring());
  for (const std::string& a : call.args) line += L" " + quoted_arg(fs::u8path(a).wstring());
  const InheritOnly inherit({record_write.h, output_write.h});
  STARTUPINFOEXW si{};
  si.StartupInfo.cb = inherit.list() ? sizeof si : sizeof si.StartupInfo;
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  si.StartupInfo.hStdInput = INVALID_HANDLE_VALUE;
  si.StartupInfo.hStdOutput = output_write.h;
  si.StartupInfo.hStdError = output_write.h;
  si.lpAttributeList = inherit.list();
  PROCESS_INFORMATION pi{};
  // CREATE_NO_WINDOW: no console flashes up for a child of a GUI-less caller. CREATE_SUSPENDED: in
  // its job before it runs a line, so whatever it starts is in the job too.
  const DWORD flags = CREATE_NO_WINDOW | CREATE_SUSPENDED | (inherit.list() ? EXTENDED_STARTUPINFO_PRESENT : 0);
  if (!CreateProcessW(exe.c_str(), line.data(), nullptr, nullptr, TRUE, flags, nullptr, nullptr, &si.StartupInfo,
                      &pi)) {
    error = last_error_text("CreateProcessW");
    return false;
  }
  c.process.h = pi.hProcess;
  // Without a job (Windows refused one), the pipes' deadline and the child's own non-inheritable
  // handles still bound the wait.
  c.job.h = make_kill_on_close_job();
  if (c.job.h && !AssignProcessToJobObject(c.job.h, pi.hProcess)) c.job.reset();
  ResumeThread(pi.hThread);
  CloseHandle(pi.hThread);
  // record_write and output_write close here: the child holds the only write ends.
  return true;
}

// An exception code as the process's exit status: the crashes a probed DLL can cause.
const char* exception_name(DWORD code) {
  switch (code) {
    case 0xC0000005: return "an access violation";
    case 0xC000001D: return "an illegal instruction";
    case 0xC0000094: return "an integer division by zero";
    case 0xC00000FD: return "a stack overflow";
    case 0xC0000409: return "a fail-fast exit (__fastfail: abort() or a detected stack buffer overrun)";
    case 0xC0000135: return "a DLL not found at start (STATUS_DLL_NOT_FOUND)";
    case 0xC0000139: return "an entry point not found (STATUS_ENTRYPOINT_NOT_FOUND)";
    case 0xC000007B: return "a bad executable image (STATUS_INVALID_IMAGE_FORMAT)";
    case 0xC0000142: return "a DLL initialisation failure (STATUS_DLL_INIT_FAILED)";
    case 0x80000003: return "a breakpoint";
    default: return nullptr;
  }
}

std::string hex(DWORD v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08lX", static_cast<unsigned long>(v));
  return buf;
}

}  // namespace

void ChildChannel::put(const std::string& key, const std::string& value) const {
  const std::string line = key + '\t' + detail::escape(value) + '\n';
  if (fd_ >= 0) _write(fd_, line.data(), static_cast<unsigned>(line.size()));
}

std::string detail::crash_text(int signal) {
  const DWORD code = static_cast<DWORD>(signal);
  const char* name = exception_name(code);
  return std::string("crashed with ") + (name ? name : "exception") + " (" + hex(code) + ")";
}

void run_child_if_asked(int argc, wchar_t** argv, ChildJobFinder find) {
  if (argc < 4 || std::wstring(argv[1]) != kChildFlag) return;
  g_record_handle = reinterpret_cast<HANDLE>(static_cast<std::uintptr_t>(std::wcstoull(argv[2], nullptr, 10)));
  // The pipes came inheritable: a process that a library starts with bInheritHandles=TRUE must not
  // get them (it would keep them open after this child ends).
  for (HANDLE h : {g_record_handle, GetStdHandle(STD_OUTPUT_HANDLE), GetStdHandle(STD_ERROR_HANDLE)}) {
    if (h && h != INVALID_HANDLE_VALUE) SetHandleInformation(h, HANDLE_FLAG_INHERIT, 0);
  }
  // No "the program can't start" or "DLL not found" dialog boxes: errors come back as codes.
  SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX | SEM_NOOPENFILEERRORBOX);
  SetUnhandledExceptionFilter(on_unhandled_exception);
  const int fd = _open_osfhandle(reinterpret_cast<intptr_t>(g_record_handle), _O_WRONLY | _O_BINARY);
  const ChildChannel channel(fd);
  const std::string job = utf8(argv[3]);
  std::vector<std::string> args;
  for (int i = 4; i < argc; ++i) args.push_back(utf8(argv[i]));
  try {
    const ChildJob body = find(job);
    if (!body) {
      channel.put("error", "no such probe job: " + job);
    } else {
      body(channel, args);
    }
  } catch (const std::exception& e) {
    channel.put("error", e.what());
  } catch (...) {
    channel.put("error", "unknown exception");
  }
  std::fflush(nullptr);
  channel.put("done", "");  // tells a normal end from a library's own exit(0)
  // Not exit(): a DLL's DllMain(PROCESS_DETACH) or atexit handlers must not run after "done".
  TerminateProcess(GetCurrentProcess(), 0);
  ExitProcess(0);
}

std::vector<IsolatedResult> run_isolated(const std::vector<ChildCall>& calls, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  std::vector<IsolatedResult> results(calls.size());
  std::vector<std::unique_ptr<Child>> children;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    results[i].timeout_ms = static_cast<long>(timeout.count());
    children.push_back(std::make_unique<Child>());
    Child& c = *children.back();
    std::fflush(nullptr);
    if (!start_child(calls[i], c, results[i].start_error)) {
      results[i].end = IsolatedResult::End::NotStarted;
      continue;
    }
    c.record_reader = std::thread(read_until_closed_or_stopped, c.record_read.h, &c.records, &c.stop_reading);
    c.output_reader = std::thread(read_until_closed_or_stopped, c.output_read.h, &c.output, &c.stop_reading);
  }
  for (std::size_t i = 0; i < calls.size(); ++i) {
    Child& c = *children[i];
    IsolatedResult& r = results[i];
    if (!c.process.h) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    const DWORD wait = left > 0 ? static_cast<DWORD>(left) : 0;
    bool timed_out = false;
    if (WaitForSingleObject(c.process.h, wait) != WAIT_OBJECT_0) {
      TerminateProcess(c.process.h, kTerminatedExitCode);
      WaitForSingleObject(c.process.h, INFINITE);
      timed_out = true;
    }
    // Whatever the child started ends with it; then what is in the pipes is read, and no more.
    if (c.job.h) TerminateJobObject(c.job.h, kTerminatedExitCode);
    c.job.reset();
    c.stop_reading = true;
    c.record_reader.join();
    c.output_reader.join();
    detail::parse_records(c.records, r);
    r.output = detail::output_lines(c.output);
    DWORD code = 0;
    GetExitCodeProcess(c.process.h, &code);
    if (timed_out) {
      r.end = IsolatedResult::End::TimedOut;
    } else if (code == 0 && r.has("done")) {
      r.end = IsolatedResult::End::Finished;
    } else if (code >= 0xC0000000 || code == 0x80000003) {
      r.end = IsolatedResult::End::Signalled;
      r.signal = static_cast<int>(code);
    } else {
      r.end = IsolatedResult::End::Exited;
      r.exit_code = static_cast<int>(code);
    }
  }
  return results;
}

}  // namespace infer

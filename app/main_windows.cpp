// infer.exe's entry point (the Windows build, cross-compiled with mingw-w64: docs/windows.md).
// Arguments arrive as UTF-16 (wmain) and run as UTF-8 (an unpaired surrogate, possible in a
// Windows file name, becomes U+FFFD: that argument names no file and is reported as such); the
// console is told the output is UTF-8.
// A child process (this program started again to load an NVIDIA DLL for the environment probe, or
// the GPU backend on trial; platform/isolated.h) runs its job and ends before any of that.
#include <windows.h>

#include <string>
#include <vector>

#include "app/entry.h"
#include "manifest/probe.h"
#include "backends/gpu_backend.h"
#include "platform/windows_message.h"

namespace {

// The jobs a child process of this program may be started for (isolated.h).
infer::ChildJob find_child_job(const std::string& name) {
  if (const infer::ChildJob job = infer::manifest::find_probe_job(name)) return job;
  return infer::find_gpu_job(name);
}

}  // namespace

int wmain(int argc, wchar_t** argv) {
  infer::run_child_if_asked(argc, argv, find_child_job);
  SetConsoleOutputCP(CP_UTF8);
  std::vector<std::string> args;
  args.reserve(static_cast<std::size_t>(argc));
  for (int i = 0; i < argc; ++i) args.push_back(infer::utf8_from_utf16(argv[i]));
  std::vector<char*> utf8;
  for (std::string& a : args) utf8.push_back(a.data());
  utf8.push_back(nullptr);
  return infer::app::main_utf8(argc, utf8.data());
}

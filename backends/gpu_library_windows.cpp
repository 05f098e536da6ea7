// Loading the GPU backend on Windows: infer_cudnn.dll (built with MSVC and the CUDA toolkit;
// docs/windows.md) by LoadLibraryExW, after a trial load in a child process (this program started again,
// isolated.h). LOAD_WITH_ALTERED_SEARCH_PATH: the DLLs it imports (cudart64_13.dll, cudnn64_9.dll)
// are searched for from its own folder, then System32, the Windows folder, the working folder and
// PATH: the order the environment check (manifest/windows/probe_windows.cpp) predicts for the same folder.
#include <windows.h>

#include <string>
#include <vector>

#include "infer/errors.h"
#include "backends/gpu_backend.h"
#include "platform/isolated.h"
#include "platform/windows_message.h"

namespace infer {
namespace {

namespace fs = std::filesystem;

constexpr DWORD kLoadFlags = LOAD_WITH_ALTERED_SEARCH_PATH;
constexpr const char* kTrialJob = "gpu-backend";

template <typename F>
F symbol(HMODULE h, const char* name) {
  return reinterpret_cast<F>(reinterpret_cast<void*>(GetProcAddress(h, name)));
}

// The child's side of the trial load: the backend with the CUDA runtime and cuDNN it imports, their
// versions, and cuDNN's sub-DLLs (cudnn64_9.dll loads them on first use of each part).
void trial_job(const ChildChannel& ch, const std::vector<std::string>& args) {
  const std::string& path = args.at(0);
  ch.step("LoadLibraryExW " + path + " (the GPU backend, with the CUDA runtime and cuDNN)");
  const HMODULE h = LoadLibraryExW(fs::u8path(path).c_str(), nullptr, kLoadFlags);
  if (!h) return;  // the real load reports it
  const auto entry = symbol<InferGpuPluginEntry>(h, "infer_gpu_plugin");
  const InferGpuPlugin* api = entry ? entry() : nullptr;
  if (!api || api->abi_version != INFER_GPU_PLUGIN_ABI) return;
  ch.step("asking the CUDA runtime and cuDNN their versions");
  InferGpuVersions v{};
  api->versions(&v);
  for (const wchar_t* front : {L"cudnn64_9.dll", L"cudnn64_8.dll"}) {
    const HMODULE cudnn = GetModuleHandleW(front);
    if (!cudnn) continue;
    for (const char* check :
         {"cudnnGraphVersionCheck", "cudnnOpsVersionCheck", "cudnnCnnVersionCheck", "cudnnAdvVersionCheck",
          "cudnnOpsInferVersionCheck", "cudnnCnnInferVersionCheck"}) {
      if (const auto f = symbol<int (*)()>(cudnn, check)) {
        ch.step(std::string(check) + "() (cuDNN loads that sub-DLL)");
        f();
      }
    }
  }
}

void trial_load(const fs::path& path) {
  const IsolatedResult r = run_isolated({ChildCall{kTrialJob, {path.u8string()}}}, probe_timeout()).front();
  if (!r.finished()) {
    throw GpuUnavailableError("loading the GPU backend " + r.failure() + "; infer --check names the cause");
  }
}

}  // namespace

const char* const kGpuLibraryName = "infer_cudnn.dll";
const char* const kGpuBuildHint =
    "this build has no GPU backend (infer_cudnn.dll is built with MSVC and the CUDA toolkit on Windows, "
    "docs/windows.md, and goes beside infer.exe)";

ChildJob find_gpu_job(const std::string& name) { return name == kTrialJob ? trial_job : nullptr; }

GpuLibrary::~GpuLibrary() { FreeLibrary(static_cast<HMODULE>(handle_)); }

std::shared_ptr<GpuLibrary> GpuLibrary::open(const fs::path& given) {
  // LOAD_WITH_ALTERED_SEARCH_PATH is defined for absolute paths with backslashes only
  // ($INFER_GPU_LIBRARY may be relative or use slashes).
  const fs::path path = fs::absolute(given).make_preferred();
  trial_load(path);
  // No "Bad Image" or "cannot find" message box for a damaged DLL or a missing dependency: the
  // error comes back as a code (the child's loads run under the same mode, isolated_windows.cpp).
  DWORD old_mode = 0;
  SetThreadErrorMode(SEM_FAILCRITICALERRORS | SEM_NOOPENFILEERRORBOX, &old_mode);
  const HMODULE handle = LoadLibraryExW(path.c_str(), nullptr, kLoadFlags);
  const DWORD error = GetLastError();
  SetThreadErrorMode(old_mode, nullptr);
  if (!handle) {
    throw GpuUnavailableError("cannot load the GPU backend " + path.u8string() + ": " + windows_error_text(error));
  }
  try {
    const InferGpuPlugin& api = checked_plugin(symbol<InferGpuPluginEntry>(handle, "infer_gpu_plugin"), path);
    return std::shared_ptr<GpuLibrary>(new GpuLibrary(handle, &api, path));
  } catch (...) {
    FreeLibrary(handle);
    throw;
  }
}

}  // namespace infer

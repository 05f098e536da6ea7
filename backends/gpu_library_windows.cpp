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
  report_plugin(ch, *api);
}

void trial_load(const fs::path& path) {
  const IsolatedResult r = run_isolated({ChildCall{kTrialJob, {path.u8string()}}}, probe_timeout()).front();
  if (!r.finished()) {
    throw GpuUnavailableError("loading the GPU backend " + r.failure() + "; infer --check names the cause");
  }
}

// LOAD_WITH_ALTERED_SEARCH_PATH is defined for absolute paths with backslashes only
// ($INFER_GPU_LIBRARY may be relative or use slashes).
fs::path load_path(const fs::path& given) { return fs::absolute(given).make_preferred(); }

}  // namespace

// One backend on Windows: CUDA 13 (the CUDA 12 one is built on Linux only).
const char* gpu_library_name(int cuda_major) { return cuda_major == 13 ? "infer_cudnn.dll" : nullptr; }
const char* const kGpuBuildHint =
    "this build has no GPU backend (infer_cudnn.dll is built with MSVC and the CUDA toolkit on Windows, "
    "docs/windows.md, and goes beside infer.exe)";

ChildJob find_gpu_job(const std::string& name) { return name == kTrialJob ? trial_job : nullptr; }

GpuLibrary::~GpuLibrary() { FreeLibrary(static_cast<HMODULE>(handle_)); }

void GpuLibrary::probe(std::vector<GpuBackendProbe>& probes) {
  std::vector<ChildCall> calls;
  std::vector<GpuBackendProbe*> probed;
  for (GpuBackendProbe& p : probes) {
    if (p.module.empty()) continue;
    calls.push_back(ChildCall{kTrialJob, {load_path(p.module).u8string()}});
    probed.push_back(&p);
  }
  const std::vector<IsolatedResult> results = run_isolated(calls, probe_timeout());
  for (std::size_t i = 0; i < results.size(); ++i) {
    read_probe(results[i], *probed[i]);
    // The child reports no load error on Windows: a DLL that did not load sent nothing.
    if (results[i].finished() && !results[i].has("loaded") && !results[i].has("load_error")) {
      probed[i]->load_failure = "cannot load the GPU backend " + probed[i]->module.u8string() +
                                " (LoadLibraryExW failed in the trial load; infer --check names the cause)";
    }
  }
}

std::shared_ptr<GpuLibrary> GpuLibrary::open(const fs::path& given) {
  trial_load(load_path(given));
  return load(given);
}

std::shared_ptr<GpuLibrary> GpuLibrary::load(const fs::path& given) {
  const fs::path path = load_path(given);
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

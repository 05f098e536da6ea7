// The probe's child jobs on Windows: each loads one NVIDIA DLL the way a program would and calls
// it, in a child process of its own (platform/isolated.h), sending what it finds as records. Arguments
// and records are UTF-8.
#include <cstddef>
#include <string>
#include <vector>

#include "manifest/probe.h"
#include "manifest/windows/probe_windows_parts.h"
#include "platform/windows_message.h"

namespace infer::manifest::detail {
namespace {

namespace fs = std::filesystem;

// Loads args[0] with LoadLibraryExW; records path or error. flags: args[1] ("system32" or "").
HMODULE child_load(const ChildChannel& ch, const std::string& name, DWORD flags, const std::string& prefix = "") {
  ch.step("LoadLibraryExW " + name);
  const HMODULE h = LoadLibraryExW(wide(name).c_str(), nullptr, flags);
  if (!h) {
    const DWORD code = GetLastError();
    ch.put(prefix + "error_code", std::to_string(code));
    ch.put(prefix + "error", windows_error_text(code));
    return nullptr;
  }
  ch.put(prefix + "path", module_path(h));
  return h;
}

// nvcuda.dll from System32: cuDriverGetVersion, cuInit, the devices.
void driver_job(const ChildChannel& ch, const std::vector<std::string>&) {
  const HMODULE h = child_load(ch, "nvcuda.dll", LOAD_LIBRARY_SEARCH_SYSTEM32);
  if (!h) return;
  using GetVersion = int(__stdcall*)(int*);
  using Init = int(__stdcall*)(unsigned);
  using GetCount = int(__stdcall*)(int*);
  using GetDevice = int(__stdcall*)(int*, int);
  using GetName = int(__stdcall*)(char*, int, int);
  using GetAttribute = int(__stdcall*)(int*, int, int);
  using TotalMem = int(__stdcall*)(std::size_t*, int);
  if (auto f = symbol<GetVersion>(h, "cuDriverGetVersion")) {
    ch.step("cuDriverGetVersion");
    int v = 0;
    if (f(&v) == 0) ch.put("driver_cuda", std::to_string(v));
  }
  auto init = symbol<Init>(h, "cuInit");
  if (!init) return;
  ch.step("cuInit");
  const int r = init(0);
  ch.put("cuda_init", std::to_string(r));
  auto count = symbol<GetCount>(h, "cuDeviceGetCount");
  if (r != 0 || !count) return;
  int n = 0;
  if (count(&n) != 0) return;
  ch.put("device_count", std::to_string(n));
  auto get = symbol<GetDevice>(h, "cuDeviceGet");
  auto name = symbol<GetName>(h, "cuDeviceGetName");
  auto attribute = symbol<GetAttribute>(h, "cuDeviceGetAttribute");
  auto mem = symbol<TotalMem>(h, "cuDeviceTotalMem_v2");
  for (int i = 0; i < n && i < 64 && get && name && attribute; ++i) {
    int dev = 0;
    char buf[256] = {};
    int major = 0, minor = 0;
    std::size_t bytes = 0;
    if (get(&dev, i) != 0 || name(buf, sizeof buf - 1, dev) != 0) continue;
    attribute(&major, 75, dev);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    attribute(&minor, 76, dev);  // ..._MINOR
    const std::string k = "gpu" + std::to_string(i) + ".";
    ch.put(k + "name", buf);
    ch.put(k + "cc", std::to_string(major) + "." + std::to_string(minor));
    if (mem && mem(&bytes, dev) == 0) ch.put(k + "mib", std::to_string(bytes >> 20));
  }
}

// nvml.dll: nvmlInit_v2 and the driver's release.
void nvml_job(const ChildChannel& ch, const std::vector<std::string>& args) {
  HMODULE h = child_load(ch, "nvml.dll", LOAD_LIBRARY_SEARCH_SYSTEM32);
  if (!h && !args.empty()) h = child_load(ch, args[0], 0, "nvsmi.");
  if (!h) return;
  using Init = int (*)();
  using Release = int (*)(char*, unsigned);
  auto init = symbol<Init>(h, "nvmlInit_v2");
  if (!init) return;
  ch.step("nvmlInit_v2");
  const int r = init();
  ch.put("nvml_init", std::to_string(r));
  if (r != 0) return;
  if (auto release = symbol<Release>(h, "nvmlSystemGetDriverVersion")) {
    char buf[96] = {};
    if (release(buf, sizeof buf - 1) == 0) ch.put("driver_release", buf);
  }
}

// args[0]: cudart64_N.dll. cudaRuntimeGetVersion.
void cudart_job(const ChildChannel& ch, const std::vector<std::string>& args) {
  if (args.empty()) return;
  const HMODULE h = child_load(ch, args[0], 0);
  if (!h) return;
  using GetVersion = int (*)(int*);
  if (auto f = symbol<GetVersion>(h, "cudaRuntimeGetVersion")) {
    ch.step("cudaRuntimeGetVersion");
    int v = 0;
    const int status = f(&v);
    if (status == 0)
      ch.put("version", std::to_string(v));
    else
      ch.put("version_error", std::to_string(status));
  }
}

// args[0]: cudnn64_N.dll, then its sub-DLLs. cudnnGetVersion, cudnnGetCudartVersion, then where
// each sub-DLL was loaded from (cuDNN loads them itself; those it has not loaded yet are loaded
// here the same way, in the process's search order).
void cudnn_job(const ChildChannel& ch, const std::vector<std::string>& args) {
  if (args.empty()) return;
  const HMODULE h = child_load(ch, args[0], 0);
  if (!h) return;
  using GetSize = std::size_t (*)();
  if (auto f = symbol<GetSize>(h, "cudnnGetVersion")) {
    ch.step("cudnnGetVersion (" + args[0] + ")");
    ch.put("version", std::to_string(f()));
  }
  if (auto f = symbol<GetSize>(h, "cudnnGetCudartVersion")) {
    ch.step("cudnnGetCudartVersion (" + args[0] + ")");
    ch.put("cudart_version", std::to_string(f()));
  }
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (const HMODULE s = GetModuleHandleW(wide(args[i]).c_str())) {
      ch.put("sub." + args[i] + ".path", module_path(s));
      ch.put("sub." + args[i] + ".by", "cudnn");
    }
  }
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (GetModuleHandleW(wide(args[i]).c_str())) continue;
    child_load(ch, args[i], 0, "sub." + args[i] + ".");
  }
}

}  // namespace


std::string module_path(HMODULE h) {
  std::wstring p(32768, L'\0');
  const DWORD n = GetModuleFileNameW(h, p.data(), static_cast<DWORD>(p.size()));
  p.resize(n);
  return utf8(fs::path(p));
}

}  // namespace infer::manifest::detail

namespace infer::manifest {

// The probe's jobs by name ("driver", "nvml", "cudart", "cudnn").
ChildJob find_probe_job(const std::string& name) {
  if (name == "driver") return detail::driver_job;
  if (name == "nvml") return detail::nvml_job;
  if (name == "cudart") return detail::cudart_job;
  if (name == "cudnn") return detail::cudnn_job;
  return nullptr;
}

}  // namespace infer::manifest

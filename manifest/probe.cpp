#include "model/nvidia_versions.h"
#include "probe.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <glob.h>
#include <link.h>
#include <sys/utsname.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <set>

#include "facts.h"

namespace infer::manifest {
namespace {

namespace fs = std::filesystem;

// C entry points, declared here so that no CUDA header is needed. Return types are the libraries'
// status enums (CUresult, nvmlReturn_t, cudaError_t, cudnnStatus_t), all int-sized.
using CuDriverGetVersion = int (*)(int*);
using CuInit = int (*)(unsigned);
using CuDeviceGetCount = int (*)(int*);
using CuGetErrorText = int (*)(int, const char**);
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlSystemGetDriverVersion = int (*)(char*, unsigned);
using NvmlDeviceGetCount = int (*)(unsigned*);
using NvmlDeviceGetHandleByIndex = int (*)(unsigned, void**);
using NvmlDeviceGetName = int (*)(void*, char*, unsigned);
using NvmlDeviceGetCudaComputeCapability = int (*)(void*, int*, int*);
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlDeviceGetMemoryInfo = int (*)(void*, NvmlMemory*);
using CudaRuntimeGetVersion = int (*)(int*);
using CudnnGetSize = std::size_t (*)();
using CudnnVersionCheck = int (*)();

// A dlopen handle, closed when it goes out of scope. Move-only.
class DlHandle {
 public:
  DlHandle() = default;
  explicit DlHandle(const std::string& name) {
    dlerror();
    handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* e = dlerror();
      error_ = e ? e : name + ": cannot be loaded";
    }
  }
  ~DlHandle() {
    if (handle_) dlclose(handle_);
  }
  DlHandle(DlHandle&& o) noexcept : handle_(o.handle_), error_(std::move(o.error_)) { o.handle_ = nullptr; }
  DlHandle& operator=(DlHandle&&) = delete;
  DlHandle(const DlHandle&) = delete;
  DlHandle& operator=(const DlHandle&) = delete;

  explicit operator bool() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  template <typename F>
  F symbol(const char* name) const {
    return handle_ ? reinterpret_cast<F>(dlsym(handle_, name)) : nullptr;
  }
  // The file the loader mapped, as it named it.
  std::string path() const {
    link_map* map = nullptr;
    if (!handle_ || dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name) return "";
    return map->l_name;
  }

 private:
  void* handle_ = nullptr;
  std::string error_;
};

DlHandle open_library(LibraryProbe& lib, const std::string& soname) {
  lib.soname = soname;
  DlHandle h(soname);
  lib.loaded = static_cast<bool>(h);
  if (h) {
    lib.path = h.path();
    using Identity = const char* (*)();
    if (auto identity = h.symbol<Identity>("infer_standin_identity")) lib.standin = identity();
  } else {
    lib.error = h.error();
  }
  lib.other_copies = visible_copies(soname);
  if (lib.loaded) {
    std::error_code ec;
    const fs::path mine = fs::canonical(lib.path, ec);
    std::vector<std::string> others;
    for (const std::string& c : lib.other_copies) {
      if (ec || fs::path(c) != mine) others.push_back(c);
    }
    lib.other_copies = std::move(others);
  }
  return h;
}

std::string read_os() {
  std::ifstream in("/etc/os-release");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return "";
}

// The first dotted number after "Kernel Module" in /proc/driver/nvidia/version.
std::optional<std::string> proc_driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  static const std::regex re(R"(Kernel Module\s+(?:for\s+\S+\s+)?([0-9]+\.[0-9]+(?:\.[0-9]+)?))");
  std::smatch m;
  if (std::regex_search(line, m, re)) return m[1].str();
  return std::nullopt;
}

std::string cu_error_text(const DlHandle& cuda, int code) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (auto f = cuda.symbol<CuGetErrorText>("cuGetErrorName")) f(code, &name);
  if (auto f = cuda.symbol<CuGetErrorText>("cuGetErrorString")) f(code, &text);
  std::string s = name ? name : "CUresult " + std::to_string(code);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void probe_driver(MachineProbe& m) {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) m.cuda_visible_devices = v;
  DlHandle cuda = open_library(m.libcuda, "libcuda.so.1");
  if (cuda) {
    int v = 0;
    if (auto f = cuda.symbol<CuDriverGetVersion>("cuDriverGetVersion"); f && f(&v) == 0 && v > 0) m.driver_cuda = v;
    if (auto init = cuda.symbol<CuInit>("cuInit")) {
      const int rc = init(0);
      if (rc == 0) {
        int count = 0;
        if (auto f = cuda.symbol<CuDeviceGetCount>("cuDeviceGetCount"); f && f(&count) == 0) m.cuda_device_count = count;
      } else {
        m.cuda_init_error = "cuInit: " + cu_error_text(cuda, rc);
        if (rc == 100) m.cuda_device_count = 0;  // CUDA_ERROR_NO_DEVICE
      }
    }
  }
  DlHandle nvml = open_library(m.libnvml, "libnvidia-ml.so.1");
  auto init = nvml.symbol<NvmlInit>("nvmlInit_v2");
  if (init && init() == 0) {
    std::array<char, 96> buf{};
    if (auto f = nvml.symbol<NvmlSystemGetDriverVersion>("nvmlSystemGetDriverVersion");
        f && f(buf.data(), static_cast<unsigned>(buf.size())) == 0) {
      m.driver_release = buf.data();
      m.driver_release_source = "nvmlSystemGetDriverVersion (" + m.libnvml.path + ")";
    }
    unsigned count = 0;
    auto get_count = nvml.symbol<NvmlDeviceGetCount>("nvmlDeviceGetCount_v2");
    auto get_handle = nvml.symbol<NvmlDeviceGetHandleByIndex>("nvmlDeviceGetHandleByIndex_v2");
    if (get_count && get_handle && get_count(&count) == 0) {
      m.gpus_known = true;
      auto get_name = nvml.symbol<NvmlDeviceGetName>("nvmlDeviceGetName");
      auto get_cc = nvml.symbol<NvmlDeviceGetCudaComputeCapability>("nvmlDeviceGetCudaComputeCapability");
      auto get_mem = nvml.symbol<NvmlDeviceGetMemoryInfo>("nvmlDeviceGetMemoryInfo");
      for (unsigned i = 0; i < count; ++i) {
        void* dev = nullptr;
        if (get_handle(i, &dev) != 0) continue;
        GpuProbe g;
        std::array<char, 128> name{};
        if (get_name && get_name(dev, name.data(), static_cast<unsigned>(name.size())) == 0) g.name = name.data();
        int major = 0, minor = 0;
        if (get_cc && get_cc(dev, &major, &minor) == 0) {
          g.compute_capability = std::to_string(major) + "." + std::to_string(minor);
        }
        NvmlMemory mem{};
        if (get_mem && get_mem(dev, &mem) == 0) g.memory_mib = mem.total / (1024ULL * 1024ULL);
        m.gpus.push_back(std::move(g));
      }
    }
    if (auto shutdown = nvml.symbol<NvmlShutdown>("nvmlShutdown")) shutdown();
  }
  if (!m.driver_release) {
    if (std::optional<std::string> r = proc_driver_release()) {
      m.driver_release = r;
      m.driver_release_source = "/proc/driver/nvidia/version";
    }
  }
}

// The major version in "13.0.88", or fallback.
int major_of(const std::string& version, int fallback) {
  const std::optional<Version> v = Version::try_parse(version);
  return v && !v->parts().empty() ? static_cast<int>(v->parts()[0]) : fallback;
}

void probe_cudart(MachineProbe& m) {
  const int major = major_of(m.build.cuda, 13);
  DlHandle rt = open_library(m.cudart, "libcudart.so." + std::to_string(major));
  if (!rt) return;
  int v = 0;
  if (auto f = rt.symbol<CudaRuntimeGetVersion>("cudaRuntimeGetVersion"); f && f(&v) == 0 && v > 0) {
    m.cudart_version = cuda_version_string(v);
    m.cudart_version_source = "cudaRuntimeGetVersion (" + m.cudart.path + ")";
  } else {
    // Without a driver, cudaRuntimeGetVersion may report 0: the soname still fixes the major.
    m.cudart_version = std::to_string(major);
    m.cudart_version_source = "soname " + m.cudart.soname + " (" + m.cudart.path + "); cudaRuntimeGetVersion gave none";
  }
}

struct LoadedObjects {
  std::vector<std::string> paths;
};

int collect_loaded(dl_phdr_info* info, std::size_t, void* data) {
  if (info->dlpi_name && *info->dlpi_name) static_cast<LoadedObjects*>(data)->paths.emplace_back(info->dlpi_name);
  return 0;
}

void probe_cudnn(MachineProbe& m) {
  const int major = major_of(m.build.cudnn, 9);
  const CudnnFiles* files = facts().cudnn_files_for(major, "linux");
  const std::string soname = files ? files->main : "libcudnn.so." + std::to_string(major);
  DlHandle cudnn = open_library(m.cudnn, soname);
  if (!cudnn) return;
  if (auto f = cudnn.symbol<CudnnGetSize>("cudnnGetVersion")) m.cudnn_version = static_cast<long>(f());
  if (auto f = cudnn.symbol<CudnnGetSize>("cudnnGetCudartVersion")) m.cudnn_cudart_version = static_cast<long>(f());
  if (!files) return;
  const fs::path dir = fs::path(m.cudnn.path).parent_path();
  for (const std::string& sub : files->sublibraries) {
    CudnnSublibrary s;
    s.soname = sub;
    std::error_code ec;
    s.in_cudnn_dir = fs::exists(dir / sub, ec);
    if (auto it = files->version_checks.find(sub); it != files->version_checks.end()) {
      s.check_function = it->second;
      // libcudnn loads the sub-library on this call, through the real loader search.
      if (auto f = cudnn.symbol<CudnnVersionCheck>(it->second.c_str())) s.check = f();
    }
    m.cudnn_sublibraries.push_back(std::move(s));
  }
  LoadedObjects loaded;
  dl_iterate_phdr(collect_loaded, &loaded);
  for (CudnnSublibrary& s : m.cudnn_sublibraries) {
    for (const std::string& p : loaded.paths) {
      if (fs::path(p).filename() == s.soname) s.loaded_path = p;
    }
  }
}

const std::string& ldconfig_listing() {
  static const std::string listing = [] {
    std::string out;
    for (const char* exe : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
      std::error_code ec;
      if (!fs::exists(exe, ec)) continue;
      const std::string command = std::string(exe) + " -p 2>/dev/null";
      std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
      if (!pipe) break;
      std::array<char, 4096> buf{};
      std::size_t n = 0;
      while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
      break;
    }
    return out;
  }();
  return listing;
}

void add_glob(const std::string& pattern, std::vector<fs::path>& dirs) {
  glob_t g{};
  if (glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) dirs.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
}

}  // namespace

std::vector<std::string> visible_copies(const std::string& soname) {
  std::vector<fs::path> dirs;
  auto add_path_list = [&](const char* var) {
    const char* v = std::getenv(var);
    if (!v) return;
    std::string s = v;
    for (std::size_t start = 0; start <= s.size();) {
      const std::size_t colon = s.find(':', start);
      const std::string d = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!d.empty()) dirs.emplace_back(d);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  };
  add_path_list("LD_LIBRARY_PATH");
  for (const char* env : {"CONDA_PREFIX", "VIRTUAL_ENV"}) {
    if (const char* p = std::getenv(env); p && *p) {
      dirs.emplace_back(fs::path(p) / "lib");
      add_glob(std::string(p) + "/lib/python3*/site-packages/nvidia/*/lib", dirs);
    }
  }
  add_glob("/usr/lib/python3*/dist-packages/nvidia/*/lib", dirs);
  add_glob("/usr/local/lib/python3*/dist-packages/nvidia/*/lib", dirs);
  add_glob("/usr/local/lib/python3*/site-packages/nvidia/*/lib", dirs);
  if (const char* home = std::getenv("HOME"); home && *home) {
    add_glob(std::string(home) + "/.local/lib/python3*/site-packages/nvidia/*/lib", dirs);
  }
  std::vector<std::string> found;
  std::set<fs::path> seen;
  auto consider = [&](const fs::path& file) {
    std::error_code ec;
    if (!fs::exists(file, ec)) return;
    const fs::path canon = fs::canonical(file, ec);
    if (ec || !seen.insert(canon).second) return;
    found.push_back(canon.string());
  };
  for (const fs::path& d : dirs) consider(d / soname);
  // ldconfig -p lines: "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9"
  const std::string& listing = ldconfig_listing();
  const std::string key = "\t" + soname + " (";
  for (std::size_t pos = listing.find(key); pos != std::string::npos; pos = listing.find(key, pos + 1)) {
    const std::size_t arrow = listing.find("=> ", pos);
    const std::size_t eol = listing.find('\n', pos);
    if (arrow == std::string::npos || (eol != std::string::npos && arrow > eol)) continue;
    consider(listing.substr(arrow + 3, eol == std::string::npos ? std::string::npos : eol - arrow - 3));
  }
  return found;
}

const MachineProbe& probe_machine(const BuildInfo& build) {
  static std::unique_ptr<MachineProbe> cached;
  if (cached && cached->build.cuda == build.cuda && cached->build.cudnn == build.cudnn &&
      cached->build.compiler == build.compiler) {
    return *cached;
  }
  auto m = std::make_unique<MachineProbe>();
  m->build = build;
  m->os = read_os();
  utsname u{};
  if (uname(&u) == 0) m->arch = u.machine;
  m->glibc = gnu_get_libc_version();
  probe_driver(*m);
  probe_cudart(*m);
  probe_cudnn(*m);
  cached = std::move(m);
  return *cached;
}

}  // namespace infer::manifest

// The driver: libcuda.so.1 (driver API) and libnvidia-ml.so.1 (NVML), each probed in a child;
// /proc/driver/nvidia/version and the libraries' file names for the kernel module's and the
// user-space release; the GPUs CUDA will use.
#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "manifest/nvidia_errors.h"
#include "manifest/probe_parts.h"
#include "platform/nvidia_versions.h"

namespace infer::manifest::detail {
namespace {

namespace fs = std::filesystem;

// C entry points, declared here so that no CUDA header is needed. Status types (CUresult,
// nvmlReturn_t) are int-sized enums.
using CuIntOut = int (*)(int*);
using CuInit = int (*)(unsigned);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuDeviceTotalMem = int (*)(std::size_t*, int);
using CuDeviceGetUuid = int (*)(unsigned char*, int);
using CuGetErrorText = int (*)(int, const char**);
using NvmlInit = int (*)();
using NvmlSystemGetDriverVersion = int (*)(char*, unsigned);
using NvmlDeviceGetCount = int (*)(unsigned*);
using NvmlDeviceGetHandleByIndex = int (*)(unsigned, void**);
using NvmlDeviceGetString = int (*)(void*, char*, unsigned);
using NvmlDeviceGetCudaComputeCapability = int (*)(void*, int*, int*);
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlDeviceGetMemoryInfo = int (*)(void*, NvmlMemory*);

constexpr int kCuDeviceAttributeCcMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR (cuda.h)
constexpr int kCuDeviceAttributeCcMinor = 76;
constexpr int kMaxDevices = 64;

template <typename F>
F sym(void* h, const char* name) {
  return reinterpret_cast<F>(dlsym(h, name));
}

// NVML's form of a device UUID: "GPU-" and the 16 bytes as 8-4-4-4-12 hex digits.
std::string uuid_text(const unsigned char* b) {
  std::array<char, 48> s{};
  std::snprintf(s.data(), s.size(), "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s.data();
}

void cuda_body(const ChildChannel& ch) {
  void* h = child_open(ch, "libcuda.so.1");
  if (!h) return;
  auto error_text = [&](int rc) {
    const char* text = nullptr;
    if (auto f = sym<CuGetErrorText>(h, "cuGetErrorString")) f(rc, &text);
    return std::string(text ? text : "");
  };
  int v = 0;
  if (auto f = sym<CuIntOut>(h, "cuDriverGetVersion")) {
    ch.step("cuDriverGetVersion");
    if (f(&v) == 0) ch.put("driver_cuda", std::to_string(v));
  }
  auto init = sym<CuInit>(h, "cuInit");
  if (!init) return;
  ch.step("cuInit(0)");
  const int rc = init(0);
  ch.put("init", std::to_string(rc));
  if (rc != 0) {
    ch.put("init_text", error_text(rc));
    return;
  }
  int count = 0;
  auto get_count = sym<CuIntOut>(h, "cuDeviceGetCount");
  if (!get_count) return;
  ch.step("cuDeviceGetCount");
  if (get_count(&count) != 0) return;
  ch.put("count", std::to_string(count));
  auto get = sym<CuDeviceGet>(h, "cuDeviceGet");
  auto get_uuid = sym<CuDeviceGetUuid>(h, "cuDeviceGetUuid_v2");
  if (!get_uuid) get_uuid = sym<CuDeviceGetUuid>(h, "cuDeviceGetUuid");
  auto get_name = sym<CuDeviceGetName>(h, "cuDeviceGetName");
  auto get_attribute = sym<CuDeviceGetAttribute>(h, "cuDeviceGetAttribute");
  auto total_mem = sym<CuDeviceTotalMem>(h, "cuDeviceTotalMem_v2");
  if (!get || !get_uuid) return;  // the GPUs are then matched to NVML's through CUDA_VISIBLE_DEVICES
  for (int i = 0; i < count && i < kMaxDevices; ++i) {
    const std::string p = "gpu" + std::to_string(i) + ".";
    int dev = 0;
    ch.step("cuDeviceGet(" + std::to_string(i) + ")");
    if (get(&dev, i) != 0) continue;
    std::array<unsigned char, 16> uuid{};
    if (get_uuid(uuid.data(), dev) == 0) ch.put(p + "uuid", uuid_text(uuid.data()));
    std::array<char, 256> name{};
    if (get_name && get_name(name.data(), static_cast<int>(name.size()), dev) == 0) ch.put(p + "name", name.data());
    int major = 0, minor = 0;
    if (get_attribute && get_attribute(&major, kCuDeviceAttributeCcMajor, dev) == 0 &&
        get_attribute(&minor, kCuDeviceAttributeCcMinor, dev) == 0) {
      ch.put(p + "cc", std::to_string(major) + "." + std::to_string(minor));
    }
    std::size_t bytes = 0;
    if (total_mem && total_mem(&bytes, dev) == 0) ch.put(p + "mib", std::to_string(bytes >> 20));
  }
}

void nvml_body(const ChildChannel& ch) {
  void* h = child_open(ch, "libnvidia-ml.so.1");
  if (!h) return;
  auto init = sym<NvmlInit>(h, "nvmlInit_v2");
  if (!init) return;
  ch.step("nvmlInit_v2");
  const int rc = init();
  ch.put("init", std::to_string(rc));
  if (rc != 0) return;
  std::array<char, 96> buf{};
  if (auto f = sym<NvmlSystemGetDriverVersion>(h, "nvmlSystemGetDriverVersion")) {
    ch.step("nvmlSystemGetDriverVersion");
    if (f(buf.data(), static_cast<unsigned>(buf.size())) == 0) ch.put("release", buf.data());
  }
  unsigned count = 0;
  auto get_count = sym<NvmlDeviceGetCount>(h, "nvmlDeviceGetCount_v2");
  auto get_handle = sym<NvmlDeviceGetHandleByIndex>(h, "nvmlDeviceGetHandleByIndex_v2");
  if (!get_count || !get_handle) return;
  ch.step("nvmlDeviceGetCount_v2");
  if (get_count(&count) != 0) return;
  ch.put("count", std::to_string(count));
  auto get_name = sym<NvmlDeviceGetString>(h, "nvmlDeviceGetName");
  auto get_uuid = sym<NvmlDeviceGetString>(h, "nvmlDeviceGetUUID");
  auto get_cc = sym<NvmlDeviceGetCudaComputeCapability>(h, "nvmlDeviceGetCudaComputeCapability");
  auto get_mem = sym<NvmlDeviceGetMemoryInfo>(h, "nvmlDeviceGetMemoryInfo");
  for (unsigned i = 0; i < count && i < kMaxDevices; ++i) {
    const std::string p = "gpu" + std::to_string(i) + ".";
    void* dev = nullptr;
    ch.step("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + ")");
    if (get_handle(i, &dev) != 0) continue;
    std::array<char, 128> text{};
    if (get_name && get_name(dev, text.data(), static_cast<unsigned>(text.size())) == 0)
      ch.put(p + "name", text.data());
    text.fill('\0');
    if (get_uuid && get_uuid(dev, text.data(), static_cast<unsigned>(text.size())) == 0)
      ch.put(p + "uuid", text.data());
    int major = 0, minor = 0;
    if (get_cc && get_cc(dev, &major, &minor) == 0)
      ch.put(p + "cc", std::to_string(major) + "." + std::to_string(minor));
    NvmlMemory mem{};
    if (get_mem && get_mem(dev, &mem) == 0) ch.put(p + "mib", std::to_string(mem.total >> 20));
  }
  if (auto shutdown = sym<NvmlInit>(h, "nvmlShutdown")) shutdown();
}

std::vector<GpuProbe> read_gpus(const IsolatedResult& r, const std::string& source) {
  std::vector<GpuProbe> gpus;
  const std::optional<long long> count = r.number("count");
  for (long long i = 0; count && i < *count && i < kMaxDevices; ++i) {
    const std::string p = "gpu" + std::to_string(i) + ".";
    if (!r.has(p + "name") && !r.has(p + "uuid")) continue;
    GpuProbe g;
    g.name = r.value(p + "name");
    g.uuid = r.value(p + "uuid");
    if (r.has(p + "cc")) g.compute_capability = r.value(p + "cc");
    if (const auto mib = r.number(p + "mib")) g.memory_mib = static_cast<std::uint64_t>(*mib);
    g.source = source + " " + std::to_string(i);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

// The release in a driver library's file name: libcuda.so.580.65.06 -> 580.65.06.
std::optional<std::string> release_in_name(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::error_code ec;
  const std::string release = driver_release_in_file_name(fs::canonical(path, ec).filename().string());
  if (ec || release.empty()) return std::nullopt;
  return release;
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

// The NVML GPUs that CUDA_VISIBLE_DEVICES selects, in its order (CUDA programming guide, "CUDA
// Environment Variables": indices or UUID prefixes, comma-separated; the list ends at the first
// entry that names no device). The NVML index order is the PCI order, which CUDA uses with
// CUDA_DEVICE_ORDER=PCI_BUS_ID; without UUIDs from the driver API it is the best available match.
void apply_visible_devices(const std::string& list, std::vector<GpuProbe>& gpus, std::vector<GpuProbe>& hidden) {
  std::vector<GpuProbe> all = std::move(gpus);
  gpus.clear();
  std::set<std::size_t> taken;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string entry = list.substr(start, comma - start);
    start = comma + 1;
    while (!entry.empty() && entry.front() == ' ') entry.erase(0, 1);
    std::optional<std::size_t> pick;
    if (!entry.empty() && entry.find_first_not_of("0123456789") == std::string::npos) {
      const unsigned long i = std::strtoul(entry.c_str(), nullptr, 10);
      if (i < all.size()) pick = i;
    } else if (entry.rfind("GPU-", 0) == 0) {
      for (std::size_t i = 0; i < all.size() && !pick; ++i) {
        if (!all[i].uuid.empty() && all[i].uuid.rfind(entry, 0) == 0) pick = i;
      }
    }
    if (!pick || !taken.insert(*pick).second) break;
    gpus.push_back(all[*pick]);
  }
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!taken.count(i)) hidden.push_back(all[i]);
  }
}

}  // namespace

std::vector<Job> driver_jobs() {
  std::vector<Job> jobs;
  jobs.push_back({cuda_body, [](const IsolatedResult& r, MachineProbe& m) {
                    read_library(r, "libcuda.so.1", m.libcuda);
                    if (const auto v = r.number("driver_cuda"); v && *v > 0) m.driver_cuda = static_cast<int>(*v);
                    if (const auto rc = r.number("init")) {
                      m.cuda_init = static_cast<int>(*rc);
                      if (*rc != 0) {
                        const std::string text = r.value("init_text");
                        m.cuda_init_error =
                            "cuInit: " + cuda_result_name(static_cast<int>(*rc)) + (text.empty() ? "" : ": " + text);
                        if (*rc == 100) m.cuda_device_count = 0;  // CUDA_ERROR_NO_DEVICE
                      }
                    }
                    if (const auto n = r.number("count"); n && *n >= 0) m.cuda_device_count = static_cast<int>(*n);
                    m.gpus = read_gpus(r, "CUDA device");
                  }});
  jobs.push_back({nvml_body, [](const IsolatedResult& r, MachineProbe& m) {
                    read_library(r, "libnvidia-ml.so.1", m.libnvml);
                    if (const auto rc = r.number("init")) m.nvml_init = static_cast<int>(*rc);
                    if (r.has("release")) {
                      m.driver_release = r.value("release");
                      m.driver_release_source = "nvmlSystemGetDriverVersion (" + m.libnvml.path + ")";
                    }
                    // NVML's list goes to hidden_gpus for now; finish_driver() sorts out what CUDA uses.
                    if (r.has("count")) {
                      m.hidden_gpus = read_gpus(r, "NVML device");
                      m.gpus_known = true;
                    }
                  }});
  return jobs;
}

void finish_driver(MachineProbe& m) {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) m.cuda_visible_devices = v;
  m.kernel_module_release = proc_driver_release();
  m.user_space_release = release_in_name(m.libnvml.path);
  if (!m.user_space_release) m.user_space_release = release_in_name(m.libcuda.path);
  if (!m.driver_release && m.kernel_module_release) {
    m.driver_release = m.kernel_module_release;
    m.driver_release_source = "/proc/driver/nvidia/version";
  }
  if (!m.driver_release && m.user_space_release) {
    m.driver_release = m.user_space_release;
    m.driver_release_source = "file name of " + (release_in_name(m.libnvml.path) ? m.libnvml.path : m.libcuda.path);
  }
  // GPUs: the driver API's own list (with UUIDs) when cuInit ran; NVML's, filtered by
  // CUDA_VISIBLE_DEVICES, otherwise.
  std::vector<GpuProbe> nvml = std::move(m.hidden_gpus);
  m.hidden_gpus.clear();
  const bool cuda_listed = !m.gpus.empty() && !m.gpus.front().uuid.empty();
  if (cuda_listed) {
    for (GpuProbe& g : m.gpus) {
      for (const GpuProbe& n : nvml) {
        if (n.uuid != g.uuid) continue;
        if (!g.compute_capability) g.compute_capability = n.compute_capability;
        if (!g.memory_mib) g.memory_mib = n.memory_mib;
        if (g.name.empty()) g.name = n.name;
      }
    }
    for (const GpuProbe& n : nvml) {
      bool used = false;
      for (const GpuProbe& g : m.gpus) used = used || g.uuid == n.uuid;
      if (!used) m.hidden_gpus.push_back(n);
    }
    m.gpus_known = true;
  } else if (m.gpus_known) {
    m.gpus = std::move(nvml);
    if (m.cuda_visible_devices) apply_visible_devices(*m.cuda_visible_devices, m.gpus, m.hidden_gpus);
  }
}

}  // namespace infer::manifest::detail

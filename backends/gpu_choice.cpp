#include "backends/gpu_choice.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "infer/errors.h"
#include "platform/nvidia_versions.h"

namespace infer {
namespace {

std::string cc_string(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

const GpuBackendProbe* probe_for(const std::vector<GpuBackendProbe>& probes, int major) {
  for (const GpuBackendProbe& p : probes) {
    if (p.cuda_major == major && !p.module.empty()) return &p;
  }
  return nullptr;
}

// The first thing that stops backend `r` on this machine, or "" when nothing does. In the order a
// user would have to fix them: nothing installed can be chosen; then the driver (no library can
// make up for it), the GPU, the libraries, the device.
std::string first_blocker(const GpuBackendRequirements& r, const GpuBackendProbe* p, const GpuChoice& machine,
                          bool driver_known) {
  const std::string cuda = "CUDA " + std::to_string(r.cuda_major);
  if (!p) return "not installed (no module of this backend was found)";
  // No driver, as any module that loaded saw it: that stops every backend, loaded or not.
  if (machine.driver_cuda == 0 && (driver_known || p->load_failure.empty())) {
    return "no NVIDIA driver (libcuda.so.1) was found";
  }
  if (machine.driver_cuda != 0 && machine.driver_cuda / 1000 < r.cuda_major) {
    return "the NVIDIA driver supports CUDA " + cuda_version_string(machine.driver_cuda) + "; " + cuda +
           " needs driver " + r.min_driver + " or newer";
  }
  if (machine.device_cc != 0 && machine.device_cc < r.min_cc) {
    return "the GPU is compute capability " + cc_string(machine.device_cc) + "; " + cuda + " supports " +
           cc_string(r.min_cc) + " and newer";
  }
  if (!p->load_failure.empty()) return p->load_failure;
  if (p->cudnn_cudart != 0 && p->cudnn_cudart / 1000 != r.cuda_major) {
    return "the cuDNN it loaded (" + cudnn_version_string(p->cudnn) + ") is built for CUDA " +
           std::to_string(p->cudnn_cudart / 1000) + "; it needs cuDNN 9 for " + cuda;
  }
  if (!p->device_error.empty()) return "no usable CUDA device (cudaGetDeviceCount: " + p->device_error + ")";
  if (p->device_count == 0) return "no CUDA device";
  return "";
}

}  // namespace

std::string gpu_backend_name(int cuda_major) { return "cu" + std::to_string(cuda_major); }

const GpuBackendVerdict* GpuChoice::verdict(int cuda_major) const {
  for (const GpuBackendVerdict& v : backends) {
    if (v.cuda_major == cuda_major) return &v;
  }
  return nullptr;
}

std::string GpuChoice::summary() const {
  std::string out;
  if (chosen != 0) {
    out = "CUDA " + std::to_string(chosen) + " backend";
    out += forced != 0 ? " (" + forced_by + ")" : " (automatic)";
    for (const GpuBackendVerdict& v : backends) {
      if (v.cuda_major > chosen && forced == 0) out += "; CUDA " + std::to_string(v.cuda_major) + ": " + v.reason;
    }
    return out;
  }
  out = forced != 0 ? "the CUDA " + std::to_string(forced) + " backend cannot run: " : "no GPU backend can run: ";
  bool first = true;
  for (const GpuBackendVerdict& v : backends) {
    if (forced != 0 && v.cuda_major != forced) continue;
    out += (first ? "" : "; ") + std::string("CUDA ") + std::to_string(v.cuda_major) + ": " + v.reason;
    first = false;
  }
  return out;
}

GpuChoice choose_gpu_backend(const std::vector<GpuBackendProbe>& probes, int forced_major,
                             const std::string& forced_by) {
  GpuChoice c;
  c.forced = forced_major;
  c.forced_by = forced_by;
  // The machine as any module saw it: a runtime newer than the driver still reads the driver's
  // version, and the device of one that could ask is the device of all.
  bool driver_known = false;  // a module loaded and asked the driver
  for (const GpuBackendProbe& p : probes) {
    c.driver_cuda = std::max(c.driver_cuda, p.driver_cuda);
    if (p.device_cc != 0) c.device_cc = p.device_cc;
    driver_known = driver_known || (!p.module.empty() && p.load_failure.empty());
  }
  for (const GpuBackendRequirements& r : kGpuBackends) {
    const GpuBackendProbe* p = probe_for(probes, r.cuda_major);
    if (forced_major != 0 && forced_major != r.cuda_major) {
      c.backends.push_back(
          {r.cuda_major, false, "not tried: the CUDA " + std::to_string(forced_major) + " backend was " + forced_by});
      continue;
    }
    GpuBackendVerdict v{r.cuda_major, false, first_blocker(r, p, c, driver_known)};
    if (v.reason.empty()) {
      v.runs = true;
      v.reason = "runs: driver supports CUDA " + cuda_version_string(c.driver_cuda) + ", CUDA runtime " +
                 cuda_version_string(p->runtime) + ", cuDNN " + cudnn_version_string(p->cudnn) + ", GPU " +
                 cc_string(c.device_cc);
    }
    if (v.runs && c.chosen == 0 && (forced_major == 0 || forced_major == r.cuda_major)) c.chosen = r.cuda_major;
    c.backends.push_back(std::move(v));
  }
  return c;
}

int parse_cuda_major(const std::string& value, const std::string& where) {
  if (value.empty() || value == "auto") return 0;
  std::string v = value;
  if (v.rfind("cu", 0) == 0) v = v.substr(2);
  for (const GpuBackendRequirements& r : kGpuBackends) {
    if (v == std::to_string(r.cuda_major)) return r.cuda_major;
  }
  std::string known;
  for (const GpuBackendRequirements& r : kGpuBackends)
    known += (known.empty() ? "" : ", ") + std::to_string(r.cuda_major);
  throw std::invalid_argument(where + " '" + value + "' is not a CUDA major of a GPU backend (" + known + " or auto)");
}

int cuda_major_from_environment() {
  const char* v = std::getenv("INFER_CUDA");
  if (!v) return 0;
  try {
    return parse_cuda_major(v, "INFER_CUDA");
  } catch (const std::invalid_argument& e) {
    throw GpuUnavailableError(e.what());
  }
}

}  // namespace infer

#include "manifest/check.h"
#include "platform/nvidia_versions.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "infer/errors.h"
#include "manifest/diagnosis.h"
#include "manifest/facts.h"
#include "manifest/glob.h"
#include "manifest/nvidia_errors.h"
#include "manifest/platform_words.h"
#include "manifest/sha256.h"

namespace infer::manifest {
namespace {

namespace fs = std::filesystem;

enum class Outcome { Holds, Fails, Unknown };

struct Eval {
  Outcome outcome = Outcome::Unknown;
  std::string found, source, fix;
  std::string because;  // the row this one follows from (ReportRow::because)
  std::vector<std::string> notes;
};

// A root cause shown on a row: the row it belongs to states it; every other row it breaks repeats
// it (so a manifest without the cause's own row still explains itself) and names it as its cause.
Eval from_problem(const detail::Problem& p, const std::string& key) {
  Eval ev{Outcome::Fails, p.found, p.source, p.fix, key == p.item ? "" : p.item, p.notes};
  return ev;
}

// The row follows from `cause` when it is not ok.
Eval follows(Eval ev, const std::string& cause) {
  if (ev.outcome != Outcome::Holds) ev.because = cause;
  return ev;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

Eval holds_if(bool ok, std::string found, std::string source, std::string fix) {
  return {ok ? Outcome::Holds : Outcome::Fails, std::move(found), std::move(source), ok ? "" : std::move(fix), "", {}};
}

Eval fails(std::string found, std::string source, std::string fix) {
  return {Outcome::Fails, std::move(found), std::move(source), std::move(fix), "", {}};
}

Eval unknown(std::string found, std::string source, std::string fix) {
  return {Outcome::Unknown, std::move(found), std::move(source), std::move(fix), "", {}};
}

// A key this version of infer does not know.
Eval not_checked() { return unknown("not checked by this infer", "", "remove the key or upgrade infer"); }

// The CUDA runtime version that matters for driver floors: the loaded one, else the compiled one.
std::optional<Version> runtime_version(const MachineProbe& m) {
  if (m.cudart_version) return Version::try_parse(*m.cudart_version);
  if (!m.build.cuda.empty()) return Version::try_parse(m.build.cuda);
  return std::nullopt;
}

// "CUDA runtime 13.0" when one is loaded, "CUDA 13.0 (the build's; no runtime loaded)" otherwise.
std::string runtime_text(const MachineProbe& m) {
  const std::optional<Version> rv = runtime_version(m);
  if (!rv) return "";
  return m.cudart_version ? "CUDA runtime " + rv->to_string()
                          : "CUDA " + rv->to_string() + " (the build's; no runtime loaded)";
}

// The driver floor of the runtime on the probe's system (Windows drivers are numbered apart).
const DriverFloor* floor_for(const MachineProbe& m, const Version& runtime) {
  return facts().driver_floor_for(runtime, words(m.platform).name);
}

std::string floor_text(const MachineProbe& m) {
  const std::optional<Version> rv = runtime_version(m);
  if (!rv) return "";
  const DriverFloor* f = floor_for(m, *rv);
  if (!f) return "";
  return "CUDA " + rv->to_string() + " needs driver >= " + f->min_driver.to_string() +
         (f->verified ? "" : " (unverified fact)");
}

std::string driver_text(const MachineProbe& m) {
  std::string s = m.driver_release ? *m.driver_release : "release unknown";
  if (m.driver_cuda) s += " (supports CUDA " + cuda_version_string(*m.driver_cuda) + ")";
  return s;
}

Eval check_version(const Expectation& e, const std::optional<std::string>& value, const std::string& found,
                   const std::string& source, const std::string& fix) {
  if (!value) return unknown(found, source, fix);
  const std::optional<Version> v = Version::try_parse(*value);
  if (!v) return unknown(found + " (not a version number)", source, "report this value: it cannot be compared");
  return holds_if(e.constraint->allows(*v), found, source, fix);
}

// How to make the loader take another copy than `loaded`: "put it first on PATH", except on
// Windows when `loaded` is in a folder the DLL search order takes before PATH (the current
// folder, the application's folder, System32, the Windows folder): no PATH entry wins over it.
std::string first_on_path(const MachineProbe& m, const std::string& loaded) {
  const std::string first = "put it first on " + std::string(words(m.platform).path_variable);
  if (m.platform != Platform::Windows || loaded.empty()) return first;
  const fs::path dir = fs::u8path(loaded).parent_path();
  std::error_code ec;
  std::string folder;
  if (fs::equivalent(dir, fs::current_path(ec), ec)) {
    folder = "the current folder";
  } else {
    for (const std::string& entry : m.path_entries) {
      if (fs::equivalent(dir, fs::u8path(entry), ec)) return first;
    }
    std::string name = dir.filename().u8string();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    folder = name == "system32" || name == "syswow64" ? "System32" : "the application's folder, or a Windows folder";
  }
  return "remove or rename " + loaded + ": Windows' DLL search order takes " + folder + " (" + dir.u8string() +
         ") before PATH, so no PATH entry can win over it" +
         (folder == "the current folder" ? "; or run infer from another folder" : "");
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& value) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, value); });
}

// The same file by canonical path where it can be resolved (the probe's system may not be this one).
std::string canonical_or(const std::string& path) {
  std::error_code ec;
  const fs::path c = fs::canonical(fs::u8path(path), ec);
  return ec ? path : c.u8string();
}

// Other copies on the loader's path (LD_LIBRARY_PATH and the ldconfig cache; Windows' DLL search
// order) of the library and of the given sub-libraries. A sub-library loaded from elsewhere than the
// one beside the loaded front is named as the copy that shadows (the front's own is then not an
// extra copy). Copies in Python environments are not on it and are named apart.
Eval shadowing(const MachineProbe& m, const LibraryProbe& lib, const std::string& what,
               const std::vector<CudnnSublibrary>& subs = {}) {
  const PlatformWords& w = words(m.platform);
  const std::string source = w.search_sources;
  if (!lib.loaded)
    return unknown("not loaded (" + lib.soname + " not found)", w.load_call, "install " + what + " first");
  std::vector<std::string> others = lib.other_copies();
  std::vector<std::string> shadows, removals;
  const fs::path front_dir = fs::u8path(lib.path).parent_path();
  for (const CudnnSublibrary& s : subs) {
    const std::string own = s.in_cudnn_dir ? canonical_or((front_dir / fs::u8path(s.soname)).u8string()) : "";
    const std::string loaded = s.loaded_path.empty() ? "" : canonical_or(s.loaded_path);
    if (!own.empty() && !loaded.empty() && loaded != own) {
      const std::string entry = detail::entry_words(m, s.loaded_path);
      shadows.push_back(s.soname + ": " + s.loaded_path + (entry.empty() ? "" : " (" + entry + ")") + " shadows " +
                        own + ", the one beside " + lib.soname);
      const std::string folder = fs::u8path(s.loaded_path).parent_path().u8string();
      const std::string removal = s.origin.rfind(w.path_variable, 0) == 0 || entry.rfind(w.path_variable, 0) == 0
                                      ? "remove " + folder + " from " + w.path_variable
                                      : "remove " + s.loaded_path;
      if (std::find(removals.begin(), removals.end(), removal) == removals.end()) removals.push_back(removal);
    }
    for (const std::string& c : s.other_copies) {
      if (c != own && c != loaded) others.push_back(c);
    }
  }
  std::vector<std::string> off_path;
  for (const LibraryCopy& c : lib.copies) {
    if (!c.on_loader_path) off_path.push_back(c.path + " (" + c.origin + ")");
  }
  const std::string aside = off_path.empty() ? "" : "; not on the loader path: " + join(off_path, ", ");
  if (others.empty() && shadows.empty())
    return {Outcome::Holds, "one copy on the loader path: " + lib.path + aside, source, "", "", {}};
  const std::string keep_one = "keep one " + lib.soname + (subs.empty() ? "" : " and one of each sub-library") +
                               " on the search path (a conda env or pip wheel can shadow the system copy): fix " +
                               w.path_variable + " or remove the extra copies";
  const std::string fix = shadows.empty()
                              ? keep_one
                              : join(removals, "; ") + ": the loader takes its sub-libraries before those of " +
                                    lib.path + (others.empty() ? "" : "; " + keep_one);
  return fails("loaded " + lib.path + (shadows.empty() ? "" : "; " + join(shadows, "; ")) +
                   (others.empty() ? "" : "; also on the loader path: " + join(others, ", ")) + aside,
               source, fix);
}

// gpu.compute_capability, gpu.name, gpu.memory_mib over the GPUs CUDA uses.
Eval evaluate_visible_gpus(const Expectation& e, const MachineProbe& m, const std::string& source) {
  const std::string& k = e.key;
  std::vector<std::string> found;
  bool ok = true, known = true;
  std::string worst;
  if (k == "gpu.compute_capability") {
    for (const GpuProbe& g : m.gpus) {
      const std::optional<Version> cc = g.compute_capability ? Version::try_parse(*g.compute_capability) : std::nullopt;
      found.push_back((g.compute_capability ? *g.compute_capability : "?") + " (" + g.name + ")");
      if (!cc) {
        known = false;
        continue;
      }
      if (!e.constraint->allows(*cc)) {
        ok = false;
        if (worst.empty()) worst = g.name + " has " + *g.compute_capability;
      }
    }
    std::string fix = worst + "; this deployment needs compute capability " + e.want;
    const std::optional<Version> rv = runtime_version(m);
    if (rv) {
      const auto it = facts().cc_floor.find(static_cast<int>(rv->parts()[0]));
      if (it != facts().cc_floor.end())
        fix += "; CUDA " + std::to_string(rv->parts()[0]) + " supports >= " + it->second.first.to_string();
    }
    fix += ": use a newer GPU (or a CUDA/cuDNN build that still supports it)";
    if (!known && ok) return unknown(join(found, ", "), source, "NVML did not report a compute capability");
    return holds_if(ok, join(found, ", "), source, fix);
  }
  if (k == "gpu.name") {
    for (const GpuProbe& g : m.gpus) {
      found.push_back(g.name);
      if (!matches_any(e.patterns, g.name)) ok = false;
    }
    return holds_if(ok, join(found, ", "), source, "use a GPU this deployment was validated on (" + e.want + ")");
  }
  if (k == "gpu.memory_mib") {
    std::optional<std::uint64_t> smallest;
    for (const GpuProbe& g : m.gpus) {
      if (g.memory_mib && (!smallest || *g.memory_mib < *smallest)) smallest = g.memory_mib;
    }
    if (!smallest) return unknown("NVML gave no memory size", source, "check the driver");
    return check_version(e, std::to_string(*smallest), std::to_string(*smallest) + " MiB", source,
                         "use a GPU with more memory (" + e.want + " MiB)");
  }
  return not_checked();
}

// The root causes, worked out once for all rows.
struct Diagnoses {
  std::optional<detail::Problem> driver;        // shown on the driver.* and gpu.* rows
  std::optional<detail::Problem> sublibraries;  // shown on the cudnn.* rows
  std::optional<detail::Problem> front;         // a foreign cuDNN front library: on cudnn.version, before the above
};

// cudnn.version, cudnn.runtime_compatible, cudnn.cuda_major, cudnn.sublibraries for a cuDNN that loads.
Eval evaluate_loaded_cudnn(const Expectation& e, const MachineProbe& m, const std::string& cudnn_fix_install) {
  const std::string& k = e.key;
  const PlatformWords& w = words(m.platform);
  if (k == "cudnn.version") {
    const std::optional<std::string> v =
        m.cudnn_version ? std::optional<std::string>(cudnn_version_string(*m.cudnn_version)) : std::nullopt;
    const std::string entry = detail::current_folder_entry(m, m.cudnn.path);
    return check_version(e, v, v.value_or("cudnnGetVersion missing"),
                         "cudnnGetVersion (" + m.cudnn.path + (entry.empty() ? "" : ", loaded from " + entry) + ")",
                         "install cuDNN " + e.want + " or " + first_on_path(m, m.cudnn.path));
  }
  if (k == "cudnn.runtime_compatible") {
    if (m.build.cudnn.empty())
      return fails("no GPU backend in this build", "compile time", "rebuild with cuDNN installed");
    if (!m.cudnn_version) return unknown("cudnnGetVersion missing", m.cudnn.path, cudnn_fix_install);
    const Version loaded = Version::parse(cudnn_version_string(*m.cudnn_version));
    const Version built = Version::parse(m.build.cudnn);
    const auto part = [](const Version& v, std::size_t i) { return i < v.parts().size() ? v.parts()[i] : 0; };
    const bool ok = part(loaded, 0) == part(built, 0) && part(loaded, 1) >= part(built, 1);
    const std::string found = loaded.to_string() + " loaded; compiled against " + built.to_string();
    std::string fix;
    if (part(loaded, 0) != part(built, 0)) {
      fix = "cuDNN " + std::to_string(part(loaded, 0)) + " loaded but the backend was compiled for cuDNN " +
            std::to_string(part(built, 0)) + ": " + cudnn_fix_install;
    } else {
      fix = "the cuDNN at " + m.cudnn.path + " is older than the " + std::to_string(part(built, 0)) + "." +
            std::to_string(part(built, 1)) +
            " the backend was compiled with (rule: same major, minor >= compiled): install cuDNN >= " +
            std::to_string(part(built, 0)) + "." + std::to_string(part(built, 1)) + " and < " +
            std::to_string(part(built, 0) + 1) + " or " + first_on_path(m, m.cudnn.path);
    }
    return holds_if(ok, found, "cudnnGetVersion (" + m.cudnn.path + ") vs compile time", fix);
  }
  if (k == "cudnn.cuda_major") {
    if (!m.cudnn_cudart_version) return unknown("cudnnGetCudartVersion missing", m.cudnn.path, cudnn_fix_install);
    const int major = static_cast<int>(*m.cudnn_cudart_version / 1000);
    const std::string found = std::to_string(major) + " (this cuDNN was built with CUDA " +
                              cuda_version_string(static_cast<int>(*m.cudnn_cudart_version)) + ")";
    const std::optional<Version> rv = runtime_version(m);
    const bool runtime_match = !rv || rv->parts()[0] == static_cast<std::uint64_t>(major);
    const bool ok = e.constraint->allows(Version({static_cast<std::uint64_t>(major)})) && runtime_match;
    return holds_if(ok, found, "cudnnGetCudartVersion (" + m.cudnn.path + ")",
                    "this cuDNN is the build for CUDA " + std::to_string(major) +
                        (m.cudart_version ? " but the CUDA runtime is " + rv->to_string()
                         : rv             ? " but this build needs CUDA " + std::to_string(rv->parts()[0])
                                          : std::string()) +
                        ": " + cudnn_fix_install);
  }
  if (k == "cudnn.sublibraries") {
    std::error_code ec;
    const fs::path dir = fs::u8path(m.cudnn.path).parent_path();
    const fs::path canon_dir = fs::canonical(dir, ec);
    std::vector<std::string> problems;
    for (const CudnnSublibrary& s : m.cudnn_sublibraries) {
      std::string p;
      if (!s.in_cudnn_dir) p = "missing from " + detail::folder_words(m, m.cudnn.path);
      if (!s.loaded_path.empty()) {
        std::error_code ec2;
        const fs::path loaded_dir = fs::canonical(fs::u8path(s.loaded_path).parent_path(), ec2);
        if (loaded_dir != canon_dir)
          p += std::string(p.empty() ? "" : ", ") + "loaded from another directory: " + s.loaded_path;
      } else if (!s.check_function.empty() && s.check && *s.check != 0) {
        p += std::string(p.empty() ? "" : ", ") + "could not be loaded";
      }
      if (s.check && *s.check != 0)
        p += std::string(p.empty() ? "" : ", ") + s.check_function + "() = " + std::to_string(*s.check) +
             " (not the same build)";
      if (!p.empty()) problems.push_back(s.soname + ": " + p);
    }
    const std::string dir_words = detail::folder_words(m, m.cudnn.path);
    const std::string found =
        problems.empty()
            ? "all " + std::to_string(m.cudnn_sublibraries.size()) + " next to " + m.cudnn.soname + " in " + dir_words +
                  (m.platform == Platform::Windows ? ", each loaded from there" : ", version checks 0")
            : join(problems, "; ");
    return holds_if(problems.empty(), found, "files in " + dir_words + ", cudnn*VersionCheck, " + w.loaded_from,
                    "install the complete cuDNN package into " + dir_words +
                        " (every sub-library of the same release as " + m.cudnn.soname +
                        "); do not mix files from different installs");
  }
  return not_checked();
}

// system.*: the OS and C library of this machine, and the compiler that built infer.
Eval evaluate_system(const Expectation& e, const MachineProbe& m) {
  const std::string& k = e.key;
  const PlatformWords& w = words(m.platform);
  if (k == "system.os")
    return holds_if(matches_any(e.patterns, m.os), m.os, w.os_source,
                    "use the OS this deployment was validated on, or update the manifest");
  if (k == "system.arch")
    return holds_if(matches_any(e.patterns, m.arch), m.arch, w.arch_source,
                    "use a machine of the validated architecture");
  if (k == "system.glibc" && m.platform == Platform::Windows)
    return unknown("no GNU C library on Windows", "", "remove system.glibc from a manifest for Windows");
  if (k == "system.glibc")
    return check_version(e, m.glibc, m.glibc, "gnu_get_libc_version", "use a system with a matching C library");
  if (k == "system.compiler") {
    return holds_if(matches_any(e.patterns, m.build.compiler), m.build.compiler, "compile time",
                    "rebuild infer with the validated compiler");
  }
  return not_checked();
}

// Windows: NVML hung, crashed or is damaged while nvcuda.dll answered. The release row is NVML's
// alone; the driver's CUDA and the GPUs come from nvcuda.dll and stand on their own.
bool nvml_alone(const MachineProbe& m, const std::optional<detail::Problem>& driver) {
  return driver && m.platform == Platform::Windows && driver->item == "driver.release" && !m.libnvml.broken.empty() &&
         m.libcuda.loaded && m.libcuda.broken.empty();
}

// driver.*: the NVIDIA driver's release, the CUDA it supports, and its floor for the CUDA runtime.
// A driver problem (Diagnoses::driver) is shown on its own row and repeated on the others.
Eval evaluate_driver(const Expectation& e, const MachineProbe& m, const Diagnoses& d) {
  const std::string& k = e.key;
  const PlatformWords& w = words(m.platform);
  const std::string nvml = m.libnvml.soname.empty() ? "NVML" : m.libnvml.soname;
  const std::string floor = floor_text(m);
  const std::optional<detail::Problem>& driver = d.driver;
  if (k == "driver.release") {
    if (driver && driver->item == k) return from_problem(*driver, k);
    if (!m.driver_release) {
      // libcuda answers, NVML does not: the release is unknown, but what libcuda says comes first.
      return follows(unknown("unknown: " + nvml + (m.libnvml.error.empty() ? " unusable" : " not found") +
                                 (m.platform == Platform::Linux ? " and no /proc/driver/nvidia/version" : ""),
                             nvml + ": " + (m.libnvml.broken.empty() ? m.libnvml.error : m.libnvml.broken),
                             "install the driver's NVML (" + nvml + "), " + w.driver_libraries),
                     "driver.cuda");
    }
    return check_version(
        e, m.driver_release, driver_text(m), m.driver_release_source,
        "upgrade the NVIDIA driver to a release " + e.want + (floor.empty() ? "" : " (" + floor + ")"));
  }
  if (driver && !nvml_alone(m, driver)) return from_problem(*driver, k);
  if (k == "driver.cuda") {
    if (!m.driver_cuda) return unknown("cuDriverGetVersion failed", m.libcuda.path, "reinstall the NVIDIA driver");
    return check_version(e, cuda_version_string(*m.driver_cuda),
                         cuda_version_string(*m.driver_cuda) + " (driver " +
                             (m.driver_release ? *m.driver_release : std::string("release unknown")) + ")",
                         "cuDriverGetVersion (" + m.libcuda.path + ")",
                         "this driver supports CUDA up to " + cuda_version_string(*m.driver_cuda) +
                             "; upgrade the driver" + (floor.empty() ? "" : " (" + floor + ")"));
  }
  if (k == "driver.runtime_compatible") {
    const std::optional<Version> rv = runtime_version(m);
    if (!rv)
      return follows(unknown("no CUDA runtime found",
                             m.platform == Platform::Windows ? std::string(w.load_call) + ": " + m.cudart.soname
                                                             : std::string("libcudart"),
                             "install the CUDA runtime"),
                     "cuda.runtime");
    const DriverFloor* f = floor_for(m, *rv);
    if (!f)
      return unknown("no driver floor known for CUDA " + rv->to_string(), "manifest/facts.toml",
                     "add the row to manifest/facts.toml");
    const std::string found =
        "driver " + driver_text(m) + "; " + runtime_text(m) + " needs >= " + f->min_driver.to_string();
    const std::string fix = "upgrade the NVIDIA driver to >= " + f->min_driver.to_string() + " for CUDA " +
                            rv->to_string() + ", or use a CUDA runtime this driver supports";
    if (m.driver_release) {
      if (const std::optional<Version> rel = Version::try_parse(*m.driver_release)) {
        return holds_if(!(*rel < f->min_driver), found, "facts.toml: " + f->source, fix);
      }
    }
    if (m.driver_cuda) {  // minor version compatibility: the driver's CUDA major must reach the runtime's
      const Version dc = Version::parse(cuda_version_string(*m.driver_cuda));
      return holds_if(dc.parts()[0] >= rv->parts()[0], found, "cuDriverGetVersion", fix);
    }
    return unknown(found, "facts.toml", "install the driver's NVML to read the release");
  }
  return not_checked();
}

// gpu.*: the GPUs CUDA uses (gpu.count), and over them, from NVML, their compute capability, name and
// memory (evaluate_visible_gpus). A driver problem (Diagnoses::driver) is shown on these rows.
Eval evaluate_gpu(const Expectation& e, const MachineProbe& m, const Diagnoses& d) {
  const std::string& k = e.key;
  const PlatformWords& w = words(m.platform);
  const std::string nvml = m.libnvml.soname.empty() ? "NVML" : m.libnvml.soname;
  if (d.driver && !nvml_alone(m, d.driver)) return from_problem(*d.driver, k);
  if (k == "gpu.count") {
    if (!m.cuda_device_count)
      return unknown(m.cuda_init_error.empty() ? "cuDeviceGetCount failed" : m.cuda_init_error,
                     "cuInit (" + m.libcuda.path + ")",
                     m.platform == Platform::Windows
                         ? "check the driver installation (Device Manager: the GPU and its driver's status)"
                         : "check the driver installation (dmesg, nvidia kernel module)");
    std::string found = std::to_string(*m.cuda_device_count);
    std::string fix = m.platform == Platform::Windows
                          ? "no GPU visible to CUDA: check in Device Manager that the GPU is present and its NVIDIA "
                            "driver has no error"
                          : "no GPU visible to CUDA: check that the GPU is attached (containers: --gpus all) and the "
                            "nvidia kernel module is loaded";
    if (m.cuda_visible_devices) {
      found += "; CUDA_VISIBLE_DEVICES='" + *m.cuda_visible_devices + "'";
      if (*m.cuda_device_count == 0) {
        fix =
            "CUDA_VISIBLE_DEVICES='" + *m.cuda_visible_devices + "' hides every GPU: unset it or set it to a GPU index";
      }
    }
    if (m.gpus_known) found += "; NVML sees " + std::to_string(m.gpus.size() + m.hidden_gpus.size());
    if (!m.cuda_init_error.empty()) found += "; " + m.cuda_init_error;
    return check_version(e, std::to_string(*m.cuda_device_count), found,
                         "cuInit + cuDeviceGetCount (" + m.libcuda.path + ")", fix);
  }
  if (!m.gpus_known) {
    const std::string why = !m.libnvml.broken.empty() ? m.libnvml.broken
                            : m.nvml_init             ? "nvmlInit_v2: " + nvml_return_name(*m.nvml_init)
                                                      : nvml + " not found (" + m.libnvml.error + ")";
    return unknown("NVML unavailable: " + why, nvml, "install the driver's NVML (" + nvml + "), " + w.driver_libraries);
  }
  if (m.gpus.empty())
    return unknown("no GPU visible to CUDA", "NVML (" + m.libnvml.path + ")",
                   "attach a GPU, or check CUDA_VISIBLE_DEVICES");
  const std::string source = m.gpus.front().source.rfind("CUDA", 0) == 0
                                 ? "driver API (" + m.libcuda.path + ")"
                                 : "NVML (" + m.libnvml.path + "), CUDA_VISIBLE_DEVICES applied";
  std::vector<std::string> hidden;
  for (const GpuProbe& g : m.hidden_gpus) {
    hidden.push_back("not considered, hidden by CUDA_VISIBLE_DEVICES: " + g.name +
                     (g.compute_capability ? " (compute capability " + *g.compute_capability + ")" : ""));
  }
  Eval ev = evaluate_visible_gpus(e, m, source);
  ev.notes = hidden;
  return ev;
}

// cuda.built and cudnn.built: `v`, the version the GPU backend was compiled with.
Eval evaluate_built(const Expectation& e, const std::string& v) {
  if (v.empty()) {
    return fails("no GPU backend in this build", "compile time",
                 "rebuild with the CUDA toolkit and cuDNN installed (see README.md)");
  }
  return check_version(e, v, v, "compile time (CMake found it)",
                       "rebuild against the version in the manifest, or update the manifest");
}

// cuda.*: the CUDA toolkit the GPU backend was compiled with, the CUDA runtime loaded, and other
// copies of it on the loader's path.
Eval evaluate_cuda(const Expectation& e, const MachineProbe& m) {
  const std::string& k = e.key;
  const PlatformWords& w = words(m.platform);
  if (k == "cuda.built") return evaluate_built(e, m.build.cuda);
  if (k == "cuda.runtime") {
    if (!m.cudart.broken.empty()) {
      return fails(m.cudart.broken, m.cudart.broken_file,
                   detail::broken_fix(m, m.cudart.broken_file, "part of the CUDA runtime"));
    }
    if (!m.cudart.loaded) {
      const std::string install =
          "install the CUDA runtime (" + m.cudart.soname + ": " + w.cudart_packages + ") and " + w.put_on_path();
      const detail::Elsewhere other = detail::found_elsewhere(m, m.cudart, m.cudart_other_majors, install);
      return fails("not found (" + m.cudart.soname + ")" + (other.found.empty() ? "" : "; " + other.found),
                   std::string(w.load_call) + ": " + m.cudart.error, other.fix.empty() ? install : other.fix);
    }
    return check_version(e, m.cudart_version, m.cudart_version.value_or("unknown"), m.cudart_version_source,
                         "install the CUDA runtime " + e.want + " or " + first_on_path(m, m.cudart.path));
  }
  if (k == "cuda.single_copy") return shadowing(m, m.cudart, "the CUDA runtime");
  return not_checked();
}

// "install cuDNN 9 for CUDA 13 (<this backend's packages>) and <put it on the path>".
std::string cudnn_install_text(const MachineProbe& m) {
  const PlatformWords& w = words(m.platform);
  const std::string cuda_major = m.build.cuda_major != 0 ? std::to_string(m.build.cuda_major)
                                 : m.build.cuda.empty()  ? std::string("13")
                                                         : m.build.cuda.substr(0, m.build.cuda.find('.'));
  // The package names carry the CUDA major (cudnn9-cuda-13, nvidia-cudnn-cu13): this backend's.
  std::string packages = w.cudnn_packages;
  for (const std::string from : {"cuda-13", "cu13"}) {
    const std::string to = from.substr(0, from.size() - 2) + cuda_major;
    for (std::size_t at = packages.find(from); at != std::string::npos; at = packages.find(from, at + to.size())) {
      packages.replace(at, from.size(), to);
    }
  }
  return "install cuDNN " +
         (m.build.cudnn.empty() ? std::string("9") : m.build.cudnn.substr(0, m.build.cudnn.find('.'))) + " for CUDA " +
         cuda_major + " (" + packages + ") and " + w.put_on_path();
}

// cudnn.*: the cuDNN the GPU backend was compiled with, the one loaded, its sub-libraries and other
// copies of it. A cuDNN that does not load, a damaged one and a sub-library problem
// (Diagnoses::sublibraries) are worked out here; the rows of a cuDNN that loads in
// evaluate_loaded_cudnn.
Eval evaluate_cudnn(const Expectation& e, const MachineProbe& m, const Diagnoses& d) {
  const std::string& k = e.key;
  const PlatformWords& w = words(m.platform);
  if (k == "cudnn.built") return evaluate_built(e, m.build.cudnn);
  if (k == "cudnn.single_copy") return shadowing(m, m.cudnn, "cuDNN", m.cudnn_sublibraries);
  const std::string cudnn_fix_install = cudnn_install_text(m);
  const std::optional<detail::Problem>& sub = d.sublibraries;
  // A foreign front library: the root cause on cudnn.version; every other row that fails follows
  // from it and has its fix (the sub-libraries missing beside it among them).
  if (d.front) {
    if (k == "cudnn.version") return from_problem(*d.front, k);
    Eval ev = k == "cudnn.sublibraries" && sub ? from_problem(*sub, k) : evaluate_loaded_cudnn(e, m, cudnn_fix_install);
    if (ev.outcome != Outcome::Holds) {
      ev.because = "cudnn.version";
      ev.fix = d.front->fix;
    }
    return ev;
  }
  if (k == "cudnn.sublibraries" && sub) return from_problem(*sub, k);
  // A damaged front library, or a nonsense answer: the first cuDNN row names the file.
  if (!m.cudnn.broken.empty()) {
    Eval ev = fails(m.cudnn.broken, m.cudnn.broken_file, detail::broken_fix(m, m.cudnn.broken_file, "part of cuDNN"));
    ev.notes = m.cudnn.output;
    return follows(ev, sub ? "cudnn.sublibraries" : k == "cudnn.version" ? "" : "cudnn.version");
  }
  if (!m.cudnn.loaded) {
    const detail::Elsewhere other = detail::found_elsewhere(m, m.cudnn, m.cudnn_other_majors, cudnn_fix_install);
    return follows(
        fails("not found (" + m.cudnn.soname + ")" + (other.found.empty() ? "" : "; " + other.found),
              std::string(w.load_call) + ": " + m.cudnn.error, other.fix.empty() ? cudnn_fix_install : other.fix),
        k == "cudnn.version" ? "" : "cudnn.version");
  }
  if (sub && k != "cudnn.sublibraries") {
    Eval ev = evaluate_loaded_cudnn(e, m, cudnn_fix_install);
    if (k == "cudnn.version" && !m.cudnn_version_from.empty()) {
      ev.found += " (answered by " + m.cudnn_version_from + ")";
    }
    return follows(ev, "cudnn.sublibraries");
  }
  return evaluate_loaded_cudnn(e, m, cudnn_fix_install);
}

// One row of the manifest, by its section.
Eval evaluate(const Expectation& e, const MachineProbe& m, const Diagnoses& d) {
  const std::string& k = e.key;
  if (k.rfind("system.", 0) == 0) return evaluate_system(e, m);
  if (k.rfind("driver.", 0) == 0) return evaluate_driver(e, m, d);
  if (k.rfind("gpu.", 0) == 0) return evaluate_gpu(e, m, d);
  if (k.rfind("cuda.", 0) == 0) return evaluate_cuda(e, m);
  if (k.rfind("cudnn.", 0) == 0) return evaluate_cudnn(e, m, d);
  return not_checked();
}

Status status_of(Outcome o, Severity s) {
  switch (o) {
    case Outcome::Holds: return Status::Ok;
    case Outcome::Fails: return s == Severity::Required ? Status::Fail : Status::Warn;
    case Outcome::Unknown: return Status::Unknown;
  }
  return Status::Unknown;
}

}  // namespace

Report check(const Manifest& manifest, const MachineProbe& machine, bool model_files) {
  Report report;
  report.manifest = manifest.path.u8string();
  const Diagnoses diagnoses{detail::driver_problem(machine, floor_text(machine)), detail::sublibrary_problem(machine),
                            detail::front_problem(machine, cudnn_install_text(machine))};
  for (const Expectation& e : manifest.items) {
    const Eval ev = evaluate(e, machine, diagnoses);
    report.rows.push_back({e.key, e.want, ev.found, ev.source, status_of(ev.outcome, e.severity), e.severity, ev.fix,
                           ev.because, ev.notes});
  }
  for (const ModelFile& f : manifest.model_files) {
    if (!model_files) break;
    Eval ev;
    std::error_code ec;
    if (!fs::exists(f.resolved, ec)) {
      ev = fails("missing", f.resolved.u8string(), "restore the model file, or remove its entry from the manifest");
    } else {
      try {
        const std::string digest = sha256_file(f.resolved);
        ev = holds_if(digest == f.sha256, "sha256 " + digest, f.resolved.u8string(),
                      "the file is not the one validated: restore it, or if the change is intended update its sha256 "
                      "in the manifest");
      } catch (const NotRegularFileError& err) {
        ev = fails(err.problem(), f.resolved.u8string(),
                   "list a regular file: [[model.files]] hashes regular files only");
      } catch (const InputError& err) {
        ev = fails(err.problem(), f.resolved.u8string(), "make the file readable");
      }
    }
    report.rows.push_back({"model:" + f.path,
                           "sha256 " + f.sha256,
                           ev.found,
                           ev.source,
                           status_of(ev.outcome, f.severity),
                           f.severity,
                           ev.fix,
                           "",
                           {}});
  }
  report.standins = machine.standins();
  report.ok = report.first_failure() == nullptr;
  return report;
}

Report check_backends(const Manifest& manifest, const BackendProbe& probe, bool model_files) {
  Report out;
  out.manifest = manifest.path.u8string();
  bool first = true;
  std::vector<std::vector<ReportRow>> backend_rows;
  for (const BackendSection& b : manifest.backends) {
    Manifest one;
    one.path = manifest.path;
    one.items = manifest.items;
    one.items.insert(one.items.end(), b.items.begin(), b.items.end());
    one.model_files = manifest.model_files;
    const MachineProbe& machine = probe(b.cuda_major);
    const Report r = check(one, machine, model_files && first);
    std::vector<ReportRow> rows;
    for (ReportRow row : r.rows) {
      const bool own = is_backend_key(row.item);
      if (!own) {  // the machine's rows and the model files: once, from the first backend's check
        // A machine row that follows from a backend's row (gpu.count from driver.release) names
        // that row as this report does: the first backend's.
        if (!row.because.empty() && is_backend_key(row.because)) row.because = b.name + "." + row.because;
        if (first) out.rows.push_back(std::move(row));
        continue;
      }
      row.item = b.name + "." + row.item;
      if (!row.because.empty() && is_backend_key(row.because)) row.because = b.name + "." + row.because;
      rows.push_back(std::move(row));
    }
    BackendOutcome outcome{b.name, b.cuda_major, r.ok, "", ""};
    if (const ReportRow* failed = r.first_failure()) {
      ReportRow named = *failed;
      if (is_backend_key(named.item)) named.item = b.name + "." + named.item;
      outcome.first_failure = one_line(named);
      outcome.fix = failed->fix;
    }
    for (const std::string& s : machine.standins()) {  // every backend's: another runtime may be one
      if (std::find(out.standins.begin(), out.standins.end(), s) == out.standins.end()) out.standins.push_back(s);
    }
    out.backends.push_back(std::move(outcome));
    backend_rows.push_back(std::move(rows));
    first = false;
  }
  bool machine_ok = true;
  for (const ReportRow& r : out.rows)
    machine_ok = machine_ok && !(r.severity == Severity::Required && r.status != Status::Ok);
  for (const BackendOutcome& b : out.backends) {
    if (b.runs && machine_ok && out.backend.empty()) out.backend = b.name;
  }
  for (std::size_t i = 0; i < backend_rows.size(); ++i) {
    for (ReportRow& row : backend_rows[i]) {
      row.counts = out.backend.empty() || out.backends[i].name == out.backend;
      out.rows.push_back(std::move(row));
    }
  }
  out.ok = out.first_failure() == nullptr;
  return out;
}

}  // namespace infer::manifest

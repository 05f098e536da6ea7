#include "manifest/diagnosis.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "manifest/facts.h"
#ifndef _WIN32
#include "manifest/library_files.h"
#endif
#include "platform/nvidia_versions.h"
#include "manifest/nvidia_errors.h"
#include "manifest/platform_words.h"

namespace infer::manifest::detail {
namespace {

namespace fs = std::filesystem;

constexpr int kCudaErrorStubLibrary = 34;            // CUDA_ERROR_STUB_LIBRARY (cuda.h)
constexpr int kCudaErrorSystemDriverMismatch = 803;  // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
constexpr int kNvmlErrorLibRmVersionMismatch = 18;   // NVML_ERROR_LIB_RM_VERSION_MISMATCH (nvml.h)

std::string folder_of(const std::string& file) { return fs::u8path(file).parent_path().u8string(); }

// Windows folders compare without case, and without a trailing separator.
std::string folder_key(std::string s) {
  while (s.size() > 1 && (s.back() == '\\' || s.back() == '/')) s.pop_back();
  for (char& c : s) c = c == '/' ? '\\' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string canonical_folder(const std::string& file) {
  std::error_code ec;
  const fs::path c = fs::canonical(fs::u8path(file).parent_path(), ec);
  return ec ? folder_of(file) : c.u8string();
}

// The LD_LIBRARY_PATH (Linux) or PATH (Windows) entry that holds `file`, if any
// ("LD_LIBRARY_PATH entry 2 (/x)", "PATH entry 1 (C:\\Tools)").
std::string path_entry(const MachineProbe& m, const std::string& file) {
  if (m.platform == Platform::Windows) {
    const std::string dir = folder_key(folder_of(file));
    for (std::size_t i = 0; i < m.path_entries.size(); ++i) {
      if (folder_key(m.path_entries[i]) == dir) return "PATH entry " + std::to_string(i + 1) + " (" + m.path_entries[i] + ")";
    }
    return "";
  }
#ifdef _WIN32
  return "";
#else
  const std::string dir = canonical_folder(file);
  for (const SearchFolder& f : loader_folders(fs::u8path(file).filename().u8string())) {
    std::error_code ec;
    const fs::path c = fs::canonical(f.path, ec);
    if (!ec && c.u8string() == dir && f.origin.rfind("LD_LIBRARY_PATH", 0) == 0) return f.origin + " (" + f.path + ")";
  }
  return "";
#endif
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace

std::string broken_fix(const MachineProbe& m, const std::string& file, const std::string& what) {
  const std::string entry = path_entry(m, file);
  std::string fix = "reinstall " + file + " from its package (" + what + ")";
  if (!entry.empty())
    fix += ", or remove " + folder_of(file) + " from " + words(m.platform).path_variable + " (it is " + entry + ")";
  return fix;
}

std::optional<Problem> driver_problem(const MachineProbe& m, const std::string& floor) {
  const std::string with_floor = floor.empty() ? "" : " (" + floor + ")";
  const bool windows = m.platform == Platform::Windows;
  const std::string cuda_lib = m.libcuda.soname.empty() ? (windows ? "nvcuda.dll" : "libcuda.so.1") : m.libcuda.soname;
  const std::string nvml_lib = m.libnvml.soname.empty() ? (windows ? "nvml.dll" : "libnvidia-ml.so.1") : m.libnvml.soname;
  const std::string load_call = words(m.platform).load_call;
  if (!m.libcuda.broken.empty()) {
    return Problem{"driver.cuda", cuda_lib + " is unusable: " + m.libcuda.broken, m.libcuda.broken_file,
                   broken_fix(m, m.libcuda.broken_file, "it belongs to the NVIDIA driver"), m.libcuda.output};
  }
  if (!m.libnvml.broken.empty()) {
    return Problem{"driver.release", nvml_lib + " is unusable: " + m.libnvml.broken, m.libnvml.broken_file,
                   broken_fix(m, m.libnvml.broken_file, "it belongs to the NVIDIA driver"), m.libnvml.output};
  }
  if (m.cuda_init == kCudaErrorStubLibrary) {
    const std::string entry = path_entry(m, m.libcuda.path);
    return Problem{
        "driver.cuda",
        m.libcuda.path + " is the CUDA toolkit's stub library, not the driver (cuInit: " +
            cuda_result_name(kCudaErrorStubLibrary) + ")",
        "cuInit (" + m.libcuda.path + ")",
        "the stub is for linking only: " +
            (entry.empty() ? "remove " + m.libcuda.path
                           : "remove " + folder_of(m.libcuda.path) + " from LD_LIBRARY_PATH (" + entry + ")") +
            "; the real libcuda.so.1 comes with the NVIDIA driver" + with_floor,
        {}};
  }
  const bool mismatch_code =
      m.nvml_init == kNvmlErrorLibRmVersionMismatch || m.cuda_init == kCudaErrorSystemDriverMismatch;
  const bool releases_differ =
      m.kernel_module_release && m.user_space_release && *m.kernel_module_release != *m.user_space_release;
  if (mismatch_code || releases_differ) {
    std::string found = "the kernel module is " + m.kernel_module_release.value_or("of another release") +
                        " but the user-space driver libraries are " +
                        m.user_space_release.value_or("of another release");
    if (m.nvml_init && *m.nvml_init != 0) found += "; nvmlInit_v2: " + nvml_return_name(*m.nvml_init);
    if (m.cuda_init && *m.cuda_init != 0) found += "; " + m.cuda_init_error;
    return Problem{"driver.release",
                   found,
                   "/proc/driver/nvidia/version vs " + (m.libnvml.path.empty() ? m.libcuda.path : m.libnvml.path),
                   "the driver was upgraded without a reboot: reboot, or reload the nvidia kernel modules "
                   "(rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe nvidia) so the kernel module is " +
                       m.user_space_release.value_or("the installed release"),
                   {}};
  }
  if (m.libcuda.loaded) return std::nullopt;
  if (m.libnvml.loaded && windows) {
    const std::string release = m.driver_release.value_or("?");
    return Problem{"driver.cuda",
                   "nvcuda.dll not found in System32, though the driver's NVML is (" + m.libnvml.path + ", driver " +
                       release + ")",
                   load_call + ": " + m.libcuda.error,
                   "the driver's install is incomplete: reinstall the NVIDIA driver (release " + release +
                       " or newer" + with_floor + "); nvcuda.dll is installed into System32 by the driver only",
                   {}};
  }
  if (m.libnvml.loaded) {
    const std::string release = m.driver_release.value_or("?");
    return Problem{
        "driver.cuda",
        "libcuda.so.1 not found, though the driver's NVML is (" + m.libnvml.path + ", driver " + release + ")",
        "dlopen: " + m.libcuda.error,
        "the driver's user-space install is incomplete: install its CUDA library (libcuda.so.1 of release " + release +
            ", e.g. the libnvidia-compute-" + release.substr(0, release.find('.')) +
            " package); in a container, add compute to NVIDIA_DRIVER_CAPABILITIES (compute,utility)",
        {}};
  }
  if (m.kernel_module_release) {
    return Problem{
        "driver.cuda",
        "no NVIDIA user-space library (libcuda.so.1, libnvidia-ml.so.1 not found) though the kernel driver " +
            *m.kernel_module_release + " is loaded",
        "/proc/driver/nvidia/version; dlopen: " + m.libcuda.error,
        "in a container: it was started without GPU access; run it with the GPU runtime (docker run --gpus all, "
        "or --runtime=nvidia with the NVIDIA Container Toolkit). On the host: install the driver's user-space "
        "libraries of release " +
            *m.kernel_module_release,
        {}};
  }
  // Windows has no driver floors in facts.toml: its driver rows start at driver.cuda.
  return Problem{windows ? "driver.cuda" : "driver.release",
                 "not installed (" + cuda_lib + " not found" + (windows ? " in System32)" : ")"),
                 load_call + ": " + m.libcuda.error,
                 "install the NVIDIA driver" + with_floor + "; " + cuda_lib +
                     " comes with the driver, not with the CUDA toolkit",
                 {}};
}

std::optional<Problem> sublibrary_problem(const MachineProbe& m) {
  if (m.cudnn.path.empty() || m.cudnn_sublibraries.empty()) return std::nullopt;
  const std::string dir = canonical_folder(m.cudnn.path);
  const CudnnFiles* files = nullptr;
  for (const CudnnFiles& f : facts().cudnn_files) {
    if (f.os == words(m.platform).name && f.main == m.cudnn.soname) files = &f;
  }
  // The release of the install: the most common own version among the sub-libraries in its folder.
  std::map<long, int> votes;
  for (const CudnnSublibrary& s : m.cudnn_sublibraries) {
    if (s.version && !s.loaded_path.empty() && canonical_folder(s.loaded_path) == dir) ++votes[*s.version];
  }
  std::optional<long> release;
  for (const auto& [v, n] : votes) {
    if (!release || n > votes[*release]) release = v;
  }
  std::vector<std::string> roots, notes, root_names;
  std::string fix;
  auto add_root = [&](const CudnnSublibrary& s, const std::string& text, const std::string& how) {
    roots.push_back(s.soname + ": " + text);
    root_names.push_back(s.soname);
    if (fix.empty()) fix = how;
  };
  const std::string reinstall = "reinstall the complete cuDNN package into " + dir +
                                " (every sub-library of the same release as " + m.cudnn.soname +
                                "); do not mix files from different installs";
  for (const CudnnSublibrary& s : m.cudnn_sublibraries) {
    const bool elsewhere = !s.loaded_path.empty() && canonical_folder(s.loaded_path) != dir;
    const std::string own = s.version ? " " + cudnn_version_string(*s.version) : "";
    if (s.problem.rfind("not a library", 0) == 0 || s.problem.find("crashed") != std::string::npos ||
        s.problem.find("did not finish") != std::string::npos) {
      const std::string file =
          s.loaded_path.empty() ? (fs::u8path(m.cudnn.path).parent_path() / s.soname).u8string() : s.loaded_path;
      add_root(s, s.problem, broken_fix(m, file, "part of cuDNN"));
    } else if (!s.in_cudnn_dir) {
      add_root(s,
               "missing from " + dir +
                   (elsewhere ? "; the loader took " + s.loaded_path + own + " from another directory" +
                                    (s.origin.empty() ? "" : " (" + s.origin + ")") + " instead"
                              : ""),
               reinstall);
    } else if (elsewhere) {
      const std::string entry = s.origin.empty() ? "" : " (" + s.origin + ")";
      add_root(s, "stray" + own + " loaded from " + folder_of(s.loaded_path) + entry + ", not the one in " + dir,
               m.platform == Platform::Windows
                   ? "remove " + s.loaded_path + ": it is " + s.soname + " of another cuDNN install, and Windows " +
                         "loads cuDNN's sub-DLLs through the process's search order (" +
                         (s.origin.empty() ? std::string("application folder, System32, PATH") : s.origin) +
                         " comes before " + dir + "); or put " + dir + " first on PATH"
               : s.origin.rfind("LD_LIBRARY_PATH", 0) == 0
                   ? "remove " + folder_of(s.loaded_path) + " from LD_LIBRARY_PATH: it holds " + s.soname +
                         " of another cuDNN install, which the loader takes before the one next to " + m.cudnn.soname
                   : "remove " + s.loaded_path +
                         " (or its folder from the loader's configuration, then run ldconfig): it is " + s.soname +
                         " of another cuDNN install");
    } else if (release && s.version && *s.version != *release) {
      add_root(s, "release" + own + " among files of " + cudnn_version_string(*release) + " in " + dir, reinstall);
    }
  }
  // The others that fail: a consequence when they need a root cause, a root cause of their own otherwise.
  for (const CudnnSublibrary& s : m.cudnn_sublibraries) {
    if (std::find(root_names.begin(), root_names.end(), s.soname) != root_names.end()) continue;
    std::string failure;
    if (s.check && *s.check != 0)
      failure = s.check_function + "() = " + std::to_string(*s.check);
    else if (!s.problem.empty())
      failure = s.problem;
    if (failure.empty()) continue;
    std::string cause;
    if (files) {
      const auto needs = files->needs.find(s.soname);
      for (const std::string& n : needs == files->needs.end() ? std::vector<std::string>{} : needs->second) {
        if (cause.empty() && std::find(root_names.begin(), root_names.end(), n) != root_names.end()) cause = n;
      }
    }
    if (!cause.empty()) {
      notes.push_back(s.soname + ": " + failure + ", a consequence of " + cause);
    } else {
      roots.push_back(s.soname + ": " + failure + " (not the same build as " + m.cudnn.soname + ")");
      root_names.push_back(s.soname);
      if (fix.empty()) fix = reinstall;
    }
  }
  if (roots.empty()) return std::nullopt;
  for (const std::string& line : m.cudnn.output) notes.push_back("printed while probing: " + line);
  return Problem{"cudnn.sublibraries", join(roots, "; "), "each sub-library loaded in a child process; files in " + dir,
                 fix, notes};
}

Elsewhere found_elsewhere(const MachineProbe& m, const LibraryProbe& lib, const std::vector<LibraryCopy>& other_majors,
                          const std::string& needed) {
  std::vector<std::string> parts;
  std::string fix;
  for (const LibraryCopy& c : lib.copies) {
    if (c.on_loader_path || !c.problem.empty()) continue;
    parts.push_back(lib.soname + (c.version.empty() ? "" : " " + c.version) + " is in " + folder_of(c.path) + " (" +
                    c.origin + "), which the loader does not search");
    if (fix.empty()) {
      fix = "use it: " + words(m.platform).prepend(folder_of(c.path));
    }
  }
  for (const LibraryCopy& c : other_majors) {
    parts.push_back("found " + c.soname + (c.version.empty() ? "" : " (" + c.version + ")") + " at " + c.path + " (" +
                    c.origin + (c.problem.empty() ? "" : "; " + c.problem) + ")");
  }
  if (!other_majors.empty() && fix.empty()) fix = "the other major found cannot replace it: " + needed;
  return {join(parts, "; "), fix};
}

}  // namespace infer::manifest::detail

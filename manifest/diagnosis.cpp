#include "manifest/diagnosis.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "manifest/facts.h"
#ifndef _WIN32
#include "manifest/library_files.h"
#endif
#include "manifest/nvidia_errors.h"
#include "manifest/platform_words.h"
#include "platform/nvidia_versions.h"

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
      if (folder_key(m.path_entries[i]) == dir)
        return "PATH entry " + std::to_string(i + 1) + " (" + m.path_entries[i] + ")";
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

// The Linux search folder that supplied a file: the first of the loader's folders that is its folder.
struct SearchEntry {
  std::string
      words;  // "LD_LIBRARY_PATH entry 2", "the current folder (empty entry 1 of LD_LIBRARY_PATH)", "ldconfig cache"
  int index = 0;       // the LD_LIBRARY_PATH entry's number; 0: not an LD_LIBRARY_PATH entry
  bool empty = false;  // an empty entry, which the loader reads as the current folder
  bool ldconfig = false;
};

SearchEntry search_entry(const MachineProbe& m, const std::string& file) {
#ifdef _WIN32
  static_cast<void>(m);
  static_cast<void>(file);
  return {};
#else
  if (m.platform != Platform::Linux || file.empty()) return {};
  const std::string dir = canonical_folder(file);
  const std::string prefix = "LD_LIBRARY_PATH entry ";
  for (const SearchFolder& f : loader_folders(fs::u8path(file).filename().u8string())) {
    std::error_code ec;
    const fs::path c = fs::canonical(f.path, ec);
    if (ec || c.u8string() != dir) continue;
    SearchEntry e;
    if (f.origin.rfind(prefix, 0) == 0) {
      e.index = std::atoi(f.origin.c_str() + prefix.size());
      e.empty = f.origin.find("empty") != std::string::npos;
      e.words = e.empty ? "the current folder (empty entry " + std::to_string(e.index) + " of LD_LIBRARY_PATH)"
                        : prefix + std::to_string(e.index);
    } else {
      e.ldconfig = f.origin == "ldconfig cache";
      e.words = f.origin;
    }
    return e;
  }
  return {};
#endif
}

// The change that stops the loader taking `file`, by how it reached it: "remove /x from
// LD_LIBRARY_PATH (entry 2)", "remove the empty entry 1 from LD_LIBRARY_PATH ...", "remove /x/lib.so (...)".
std::string remove_words(const MachineProbe& m, const std::string& file) {
  const SearchEntry e = search_entry(m, file);
  const std::string n = std::to_string(e.index);
  if (e.empty)
    return "remove the empty entry " + n +
           " from LD_LIBRARY_PATH (the loader reads an empty entry as the current "
           "folder, " +
           canonical_folder(file) + "), or move " + file + " out of that folder";
  if (e.index) return "remove " + folder_of(file) + " from LD_LIBRARY_PATH (entry " + n + ")";
  if (e.ldconfig)
    return "remove " + file + " (or its folder from the loader's configuration, /etc/ld.so.conf.d), then run ldconfig";
  return "remove " + file;
}

// The name of the real file behind `path` (libcuda.so.1 -> libcuda.so.580.65.06), or "" when it
// cannot be resolved.
std::string real_file_name(const std::string& path) {
  if (path.empty()) return "";
  std::error_code ec;
  const std::string real = fs::canonical(fs::u8path(path), ec).filename().u8string();
  return ec ? "" : real;
}

// The driver release in the real file's name behind `path`, or "".
std::string release_in_file_name(const std::string& path) {
  const std::string real = real_file_name(path);
  return real.empty() ? "" : driver_release_in_file_name(real);
}

// The major in a library's name: libcudnn.so.9 -> 9, cudart64_13.dll -> 13; 0 when none.
int soname_major(const std::string& soname) {
  std::string name = soname;
  if (const std::size_t dll = name.rfind(".dll"); dll != std::string::npos) name = name.substr(0, dll);
  std::size_t end = name.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
  std::size_t start = end;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(name[start - 1]))) --start;
  return start == end ? 0 : std::atoi(name.substr(start, end - start).c_str());
}

}  // namespace

std::string current_folder_entry(const MachineProbe& m, const std::string& file) {
  const SearchEntry e = search_entry(m, file);
  return e.empty ? e.words : "";
}

std::string folder_words(const MachineProbe& m, const std::string& file) {
  const SearchEntry e = search_entry(m, file);
  const std::string dir = canonical_folder(file);
  return e.empty ? "the current folder " + dir + " (empty entry " + std::to_string(e.index) + " of LD_LIBRARY_PATH)"
                 : dir;
}

std::string entry_words(const MachineProbe& m, const std::string& file) {
  if (m.platform == Platform::Windows) return path_entry(m, file);
  return search_entry(m, file).words;
}

std::string broken_fix(const MachineProbe& m, const std::string& file, const std::string& what) {
  const std::string entry = path_entry(m, file);
  std::string fix = "reinstall " + file + " from its package (" + what + ")";
  // Windows: never "remove System32 from PATH"; the driver's DLLs load from there alone.
  const std::string folder = folder_key(folder_of(file));
  const bool system32 = m.platform == Platform::Windows && folder.size() >= 9 &&
                        (folder.compare(folder.size() - 9, 9, "\\system32") == 0 ||
                         folder.compare(folder.size() - 9, 9, "\\syswow64") == 0);
  if (!entry.empty() && !system32)
    fix += ", or remove " + folder_of(file) + " from " + words(m.platform).path_variable + " (it is " + entry + ")";
  return fix;
}

std::optional<Problem> driver_problem(const MachineProbe& m, const std::string& floor) {
  const std::string with_floor = floor.empty() ? "" : " (" + floor + ")";
  const bool windows = m.platform == Platform::Windows;
  const std::string cuda_lib = m.libcuda.soname.empty() ? (windows ? "nvcuda.dll" : "libcuda.so.1") : m.libcuda.soname;
  const std::string nvml_lib =
      m.libnvml.soname.empty() ? (windows ? "nvml.dll" : "libnvidia-ml.so.1") : m.libnvml.soname;
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
  if (!windows && m.cuda_init == kCudaErrorSystemDriverMismatch && m.nvml_init == 0 && m.driver_release) {
    // NVML works, so the kernel module and the driver's user-space libraries agree (were they of
    // different releases, nvmlInit_v2 would fail with NVML_ERROR_LIB_RM_VERSION_MISMATCH): it is the
    // libcuda that was loaded that is not the driver's, e.g. a cuda-compat package's copy on the path.
    std::string real = real_file_name(m.libcuda.path);
    if (real.empty()) real = fs::u8path(m.libcuda.path).filename().u8string();
    const std::string release = driver_release_in_file_name(real);
    const std::string kernel = m.kernel_module_release ? "; the kernel module is " + *m.kernel_module_release : "";
    const bool compat = m.libcuda.path.find("compat") != std::string::npos;
    return Problem{"driver.cuda",
                   cuda_lib + " is not the driver's: cuInit in " + m.libcuda.path +
                       (release.empty() ? " (release unknown: its file name " + real + " carries none)"
                                        : " (release " + release + ", from its file name " + real + ")") +
                       " returned " + cuda_result_name(kCudaErrorSystemDriverMismatch) + ", while NVML (" +
                       m.libnvml.path + ") works and reports driver " + *m.driver_release + kernel,
                   "cuInit (" + m.libcuda.path + "); nvmlSystemGetDriverVersion (" + m.libnvml.path + ")" +
                       (m.kernel_module_release ? "; /proc/driver/nvidia/version" : ""),
                   remove_words(m, m.libcuda.path) + ": its " + cuda_lib +
                       (compat ? " is a cuda-compat package's copy that" : "") + " does not match driver " +
                       *m.driver_release + ", and without it the loader takes the driver's own " + cuda_lib +
                       (compat ? " (or remove the cuda-compat package)" : ""),
                   {}};
  }
  const bool mismatch_code =
      m.nvml_init == kNvmlErrorLibRmVersionMismatch || m.cuda_init == kCudaErrorSystemDriverMismatch;
  const bool releases_differ =
      m.kernel_module_release && m.user_space_release && *m.kernel_module_release != *m.user_space_release;
  if (mismatch_code || releases_differ) {
    // Each release is named only where it was read: the kernel module's from /proc/driver/nvidia/version,
    // the user-space one from the libraries' file names.
    const std::optional<std::string>& kernel = m.kernel_module_release;
    const std::optional<std::string>& user = m.user_space_release;
    std::string found =
        kernel && user ? "the kernel module is " + *kernel + " but the user-space driver libraries are " + *user
        : user         ? "the user-space driver libraries are " + *user +
                     " but the kernel module is of another release (its release could not be read)"
        : kernel ? "the kernel module is " + *kernel + " but the user-space driver libraries are of another release"
                 : "the kernel module and the user-space driver libraries are of different releases";
    std::vector<std::string> sources;
    if (kernel) sources.push_back("/proc/driver/nvidia/version");
    if (user) {
      const std::string& named = release_in_file_name(m.libnvml.path) == *user ? m.libnvml.path : m.libcuda.path;
      sources.push_back("file name of " + named);
    }
    if (m.nvml_init && *m.nvml_init != 0) {
      found += "; nvmlInit_v2: " + nvml_return_name(*m.nvml_init);
      sources.push_back("nvmlInit_v2 (" + m.libnvml.path + ")");
    }
    if (m.cuda_init && *m.cuda_init != 0) {
      found += "; " + m.cuda_init_error;
      sources.push_back("cuInit (" + m.libcuda.path + ")");
    }
    std::string fix =
        "the driver was upgraded without a reboot: reboot, or reload the nvidia kernel modules "
        "(rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe nvidia) so the kernel module is " +
        user.value_or("the installed release");
    // cuInit's 803 alone, with no word from NVML or /proc: the libcuda may be a foreign copy instead.
    if (!windows && m.nvml_init != kNvmlErrorLibRmVersionMismatch && !releases_differ) {
      fix = "if " + m.libcuda.path + " is not the driver's own " + cuda_lib + " (a cuda-compat package's copy), " +
            remove_words(m, m.libcuda.path) + "; otherwise " + fix;
    }
    return Problem{"driver.release", found, join(sources, "; "), fix, {}};
  }
  if (m.libcuda.loaded) return std::nullopt;
  if (m.libnvml.loaded && windows) {
    const std::string release = m.driver_release.value_or("?");
    return Problem{"driver.cuda",
                   "nvcuda.dll not found in System32, though the driver's NVML is (" + m.libnvml.path + ", driver " +
                       release + ")",
                   load_call + ": " + m.libcuda.error,
                   "the driver's install is incomplete: reinstall the NVIDIA driver (release " + release + " or newer" +
                       with_floor + "); nvcuda.dll is installed into System32 by the driver only",
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
  return Problem{
      windows ? "driver.cuda" : "driver.release",
      "not installed (" + cuda_lib + " not found" + (windows ? " in System32)" : ")"),
      load_call + ": " + m.libcuda.error,
      "install the NVIDIA driver" + with_floor + "; " + cuda_lib + " comes with the driver, not with the CUDA toolkit",
      {}};
}

std::optional<Problem> front_problem(const MachineProbe& m, const std::string& install) {
  if (m.platform != Platform::Linux || !m.cudnn.loaded || !m.cudnn.broken.empty() || !m.cudnn_version)
    return std::nullopt;
  const int want = soname_major(m.cudnn.soname);
  const int got = cudnn_version_major(*m.cudnn_version);
  const std::string dir = canonical_folder(m.cudnn.path);
  // The folder the sub-libraries came from when none is beside the front, and that install's
  // release (their own version symbols).
  bool lone = !m.cudnn_sublibraries.empty();
  std::map<std::string, int> from;
  for (const CudnnSublibrary& s : m.cudnn_sublibraries) {
    if (s.in_cudnn_dir) lone = false;
    if (!s.in_cudnn_dir && !s.loaded_path.empty()) ++from[canonical_folder(s.loaded_path)];
  }
  std::string install_dir;
  for (const auto& [folder, n] : from) {
    if (install_dir.empty() || n > from[install_dir]) install_dir = folder;
  }
  std::map<long, int> votes;
  for (const CudnnSublibrary& s : m.cudnn_sublibraries) {
    if (s.version && !s.loaded_path.empty() && canonical_folder(s.loaded_path) == install_dir) ++votes[*s.version];
  }
  std::optional<long> release;
  for (const auto& [v, n] : votes) {
    if (!release || n > votes[*release]) release = v;
  }
  // The copy of the front it shadows: the one in the install's folder, else the next on the path.
  const LibraryCopy* shadowed = nullptr;
  for (const LibraryCopy& c : m.cudnn.copies) {
    if (!c.on_loader_path || !c.problem.empty()) continue;
    if (!install_dir.empty() && canonical_folder(c.path) == install_dir) {
      shadowed = &c;
      break;
    }
    if (!shadowed) shadowed = &c;
  }
  const bool shadows_install = shadowed && !install_dir.empty() && canonical_folder(shadowed->path) == install_dir;
  const bool other_major = want != 0 && got != want;
  // A lone front that answers with its install's release is only a spare copy of it.
  const bool other_install =
      lone && shadows_install && !(release && *release == *m.cudnn_version && m.cudnn_version_from.empty());
  if (!other_major && !other_install) return std::nullopt;

  const std::string cudart =
      m.cudnn_cudart_version ? "CUDA " + cuda_version_string(static_cast<int>(*m.cudnn_cudart_version)) : "";
  const std::string version = cudnn_version_string(*m.cudnn_version) + (cudart.empty() ? "" : " for " + cudart);
  const SearchEntry entry = search_entry(m, m.cudnn.path);
  const std::string place =
      entry.empty ? folder_words(m, m.cudnn.path) : dir + (entry.words.empty() ? "" : " (" + entry.words + ")");
  const std::string major_text = std::to_string(got);
  // A real cuDNN 9 front forwards cudnnGetVersion to its graph library, wherever that came from.
  const bool answered_elsewhere = !m.cudnn_version_from.empty() && canonical_folder(m.cudnn_version_from) != dir;
  std::string found = version + (answered_elsewhere ? " (answered by " + m.cudnn_version_from + ")" : "") + " from " +
                      m.cudnn.path + ": " +
                      (other_major ? "cuDNN " + major_text + " under cuDNN " + std::to_string(want) + "'s name"
                                   : "a front library without its sub-libraries") +
                      ", in " + place;
  const std::string install_release = release ? "the cuDNN " + cudnn_version_string(*release) + " install" : "";
  if (shadowed) {
    const std::string where = entry_words(m, shadowed->path);
    found += "; the loader takes it before " + shadowed->path + (where.empty() ? "" : " (" + where + ")") +
             (shadows_install
                  ? ", " + (release ? install_release : std::string("the install")) + " whose sub-libraries it loads"
                  : "");
  } else {
    found += "; no other " + m.cudnn.soname + " is on the loader path";
  }
  const std::string count = got >= 9 ? " (" + cudnn_version_string(*m.cudnn_version) + ")"
                                     : " (" + cudnn_version_string(*m.cudnn_version) + ": cuDNN " + major_text +
                                           " counts major*1000 + minor*100 + patch)";
  std::string source = "cudnnGetVersion() = " + std::to_string(*m.cudnn_version) + count;
  if (m.cudnn_cudart_version)
    source += ", cudnnGetCudartVersion() = " + std::to_string(*m.cudnn_cudart_version) + " (" + cudart + ")";
  source += " in " + m.cudnn.path + (entry.words.empty() ? "" : ", loaded from " + entry.words) +
            "; each sub-library loaded in a child process";
  const std::string what = other_major ? "this cuDNN " + version : "this lone " + version + " front";
  const std::string fix = shadowed
                              ? remove_words(m, m.cudnn.path) + ", so that the loader takes " + shadowed->path +
                                    (install_release.empty() ? "" : ", " + install_release) + ", instead of " + what
                              : remove_words(m, m.cudnn.path) + ": its " + m.cudnn.soname + " is cuDNN " + version +
                                    ", not cuDNN " + std::to_string(want) + "; then " + install;
  return Problem{"cudnn.version", found, source, fix, {}};
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
  const std::string dir_words = folder_words(m, m.cudnn.path);
  const std::string reinstall = "reinstall the complete cuDNN package into " + dir_words +
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
               "missing from " + dir_words +
                   (elsewhere ? "; the loader took " + s.loaded_path + own + " from another directory" +
                                    (s.origin.empty() ? "" : " (" + s.origin + ")") + " instead"
                              : ""),
               reinstall);
    } else if (elsewhere) {
      const std::string entry = s.origin.empty() ? "" : " (" + s.origin + ")";
      add_root(s, "stray" + own + " loaded from " + folder_of(s.loaded_path) + entry + ", not the one in " + dir_words,
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
      add_root(s, "release" + own + " among files of " + cudnn_version_string(*release) + " in " + dir_words,
               reinstall);
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
  return Problem{"cudnn.sublibraries", join(roots, "; "),
                 "each sub-library loaded in a child process; files in " + dir_words, fix, notes};
}

Elsewhere found_elsewhere(const MachineProbe& m, const LibraryProbe& lib, const std::vector<LibraryCopy>& other_majors,
                          const std::string& needed) {
  std::vector<std::string> parts;
  std::string fix;
  for (const LibraryCopy& c : lib.copies) {
    // Windows: a copy the loader misses for a reason of its own (a quoted PATH entry, a conda env
    // not activated) says how to reach it in `problem`, a damaged one what is wrong, and CUDA_PATH
    // at a folder without it why not (probe_windows.cpp).
    if (m.platform == Platform::Windows && !c.on_loader_path && !c.problem.empty()) {
      if (c.version.empty()) {
        parts.push_back(lib.soname + " in " + folder_of(c.path) + " (" + c.origin + "): " + c.problem);
      } else {
        parts.push_back(lib.soname + " " + c.version + " is in " + folder_of(c.path) + " (" + c.origin +
                        "), which the loader does not search");
        if (fix.empty()) fix = c.problem;
      }
      continue;
    }
    if (c.on_loader_path || !c.problem.empty()) continue;
    // A file with the name that is another major inside (cuDNN 8 as libcudnn.so.9) is no way out.
    const int major = c.version.empty() ? 0 : std::atoi(c.version.c_str());
    const bool usable = major == 0 || major == soname_major(lib.soname);
    parts.push_back(lib.soname + (c.version.empty() ? "" : " " + c.version) + " is in " + folder_of(c.path) + " (" +
                    c.origin + "), which the loader does not search" +
                    (usable ? "" : ", and it is of major " + std::to_string(major) + " under this major's name"));
    if (fix.empty() && usable) {
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

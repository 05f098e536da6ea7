// probe_machine() on Windows. Every call into an NVIDIA DLL runs in a child process (this program
// started again, platform/isolated.h; the jobs are probe_windows_jobs.cpp); what the files are (their VERSIONINFO,
// which folder of the DLL search order holds them, which dependent DLL is missing) is read here without loading them.
//
// The loads follow what a program gets: LoadLibraryExW(name, nullptr, 0), the standard search
// order (the application's folder, System32, the Windows folder, the current folder, PATH), except
// the driver's nvcuda.dll, which the CUDA runtime loads from System32 only
// (LOAD_LIBRARY_SEARCH_SYSTEM32), and nvml.dll, which the driver puts in System32 (older drivers:
// %ProgramFiles%\NVIDIA Corporation\NVSMI). cuDNN's front DLL loads its sub-DLLs through the same
// standard order, not from its own folder.
#include <windows.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "infer/errors.h"
#include "manifest/constraint.h"
#include "manifest/facts.h"
#include "manifest/probe.h"
#include "manifest/windows/dll_search.h"
#include "manifest/windows/pe_file.h"
#include "manifest/windows/probe_windows_parts.h"
#include "platform/isolated.h"
#include "platform/nvidia_versions.h"
#include "platform/windows_message.h"

namespace infer::manifest {

namespace {

namespace fs = std::filesystem;

using detail::symbol;
using detail::utf8;
using detail::wide;

std::string env(const wchar_t* name) {
  const DWORD n = GetEnvironmentVariableW(name, nullptr, 0);
  if (n == 0) return "";
  std::wstring v(n, L'\0');
  const DWORD m = GetEnvironmentVariableW(name, v.data(), n);
  v.resize(m);
  return utf8_from_utf16(v);
}

// ---- The checking process. ----

// A folder the loader does not search that may hold NVIDIA's DLLs.
struct OffPathFolder {
  fs::path path;
  std::string role;  // "CUDA_PATH (C:\x)", "virtualenv C:\venv", ...
  // Why the loader misses this folder and what makes it use it, when the usual PATH line is not
  // the whole story ("remove the quotes from PATH entry 1 ..."); "" otherwise.
  std::string use;
};

struct Folders {
  DllSearchOrder order;                 // what LoadLibraryExW(name, nullptr, 0) searches
  std::vector<OffPathFolder> off_path;  // CUDA_PATH\bin, conda and pip folders: not searched
  std::vector<std::pair<std::string, std::string>> cuda_variables;  // CUDA_PATH, CUDA_PATH_V*: name, value
};

fs::path windows_dir() {
  wchar_t buf[MAX_PATH];
  const UINT n = GetWindowsDirectoryW(buf, MAX_PATH);
  return n ? fs::path(std::wstring(buf, n)) : fs::path(L"C:\\Windows");
}

fs::path application_dir() {
  std::wstring p(32768, L'\0');
  p.resize(GetModuleFileNameW(nullptr, p.data(), static_cast<DWORD>(p.size())));
  return fs::path(p).parent_path();
}

// PATH's entries as the loader reads them: split at ';', empty ones dropped, quotes kept (the
// loader takes a quoted entry's quotes as part of the folder's name, so never finds it).
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(';', start);
    if (end == std::string::npos) end = path.size();
    std::string e = path.substr(start, end - start);
    if (!e.empty()) out.push_back(e);
    start = end + 1;
  }
  return out;
}

// The wheels' DLL folders of a Python environment's site-packages: nvidia\*\bin (nvidia-cudnn-cu13:
// nvidia\cudnn\bin) and nvidia\*\bin\x86_64 (nvidia-cuda-runtime 13: nvidia\cu13\bin\x86_64).
void add_wheel_folders(const fs::path& site_packages, const std::string& role, const std::string& use,
                       std::vector<OffPathFolder>& out) {
  std::error_code ec;
  for (fs::directory_iterator it(site_packages / "nvidia", ec), end; !ec && it != end; it.increment(ec)) {
    for (const fs::path& bin : {it->path() / "bin", it->path() / "bin" / "x86_64"}) {
      if (fs::is_directory(bin, ec))
        out.push_back({bin, role, use.empty() ? "" : use + words(Platform::Windows).prepend(utf8(bin))});
    }
  }
}

// The conda installs' environments that are not activated, where Miniconda, Anaconda and Miniforge
// install by default (%USERPROFILE%\miniconda3, %ProgramData%\anaconda3, ...): each base env and
// each of its envs\*, one level, nothing recursive.
void add_inactive_conda_envs(std::vector<OffPathFolder>& out) {
  for (const wchar_t* base : {L"USERPROFILE", L"ProgramData"}) {
    const std::string root = env(base);
    if (root.empty()) continue;
    for (const char* install : {"miniconda3", "anaconda3", "miniforge3", "mambaforge"}) {
      const fs::path prefix = wide(root) / install;
      std::error_code ec;
      if (!fs::is_directory(prefix, ec)) continue;
      std::vector<fs::path> envs{prefix};
      for (fs::directory_iterator it(prefix / "envs", ec), end; !ec && it != end; it.increment(ec)) {
        if (it->is_directory(ec)) envs.push_back(it->path());
      }
      for (const fs::path& e : envs) {
        const std::string role = "conda env " + utf8(e) + ", not activated";
        const std::string use = "activate that conda env (conda activate " + utf8(e) + "), or use it as it is: ";
        const fs::path lib = e / "Library" / "bin";
        out.push_back({lib, role, use + words(Platform::Windows).prepend(utf8(lib))});
        add_wheel_folders(e / "Lib" / "site-packages", role + " (pip wheel)", use, out);
      }
    }
  }
}

Folders search_folders(const MachineProbe& m) {
  std::error_code ec;
  std::vector<fs::path> path_entries;
  for (const std::string& e : m.path_entries) path_entries.push_back(wide(e));
  Folders f{DllSearchOrder::standard(application_dir(), windows_dir(), fs::current_path(ec), path_entries), {}, {}};
  // A quoted entry's folder, which the loader never reaches.
  for (std::size_t i = 0; i < m.path_entries.size(); ++i) {
    const std::string& e = m.path_entries[i];
    if (e.find('"') == std::string::npos) continue;
    std::string unquoted = e;
    unquoted.erase(std::remove(unquoted.begin(), unquoted.end(), '"'), unquoted.end());
    if (unquoted.empty()) continue;
    const std::string entry = "PATH entry " + std::to_string(i + 1) + " (" + e + ")";
    f.off_path.push_back({wide(unquoted), entry,
                          "remove the quotes from " + entry +
                              ": Windows' DLL loader takes them as part of the folder's name, so it never searches "
                              "that folder (set PATH=" +
                              unquoted + ";%PATH% in place of the quoted entry)"});
  }
  if (const std::string cuda = env(L"CUDA_PATH"); !cuda.empty()) {
    f.off_path.push_back({wide(cuda) / "bin", "CUDA_PATH (" + cuda + ")", ""});
    f.cuda_variables.emplace_back("CUDA_PATH", cuda);
  }
  // CUDA_PATH_V13_0 ...: one per installed toolkit, set by NVIDIA's installer.
  if (LPWCH block = GetEnvironmentStringsW()) {
    for (const wchar_t* p = block; *p; p += wcslen(p) + 1) {
      const std::wstring entry(p);
      const std::size_t eq = entry.find(L'=', 1);
      if (eq == std::wstring::npos || entry.compare(0, 11, L"CUDA_PATH_V") != 0) continue;
      const std::string name = utf8(fs::path(entry.substr(0, eq)));
      const std::string value = utf8(fs::path(entry.substr(eq + 1)));
      f.off_path.push_back({wide(value) / "bin", name + " (" + value + ")", ""});
      f.cuda_variables.emplace_back(name, value);
    }
    FreeEnvironmentStringsW(block);
  }
  if (const std::string conda = env(L"CONDA_PREFIX"); !conda.empty()) {
    f.off_path.push_back({wide(conda) / "Library" / "bin", "conda env " + conda, ""});
    add_wheel_folders(wide(conda) / "Lib" / "site-packages", "conda env " + conda + " (pip wheel)", "", f.off_path);
  }
  if (const std::string venv = env(L"VIRTUAL_ENV"); !venv.empty())
    add_wheel_folders(wide(venv) / "Lib" / "site-packages", "virtualenv " + venv, "", f.off_path);
  add_inactive_conda_envs(f.off_path);
  return f;
}

bool same_folder(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(wide(a), wide(b), ec);
}

bool in_search_order(const fs::path& folder, const Folders& f) {
  return std::any_of(f.order.folders.begin(), f.order.folders.end(),
                     [&](const DllFolder& d) { return same_folder(d.path, folder); });
}

// "13.0.96" in a ProductName "NVIDIA CUDA 13.0.96 Runtime" (NVIDIA's CUDA DLLs put their release
// there; their FileVersion is 6.14.11.13000), or "".
std::string cuda_release_in(const std::string& product_name) {
  for (std::size_t at = product_name.find("CUDA "); at != std::string::npos; at = product_name.find("CUDA ", at + 1)) {
    std::size_t end = at + 5;
    while (end < product_name.size() &&
           (std::isdigit(static_cast<unsigned char>(product_name[end])) || product_name[end] == '.'))
      ++end;
    if (const std::optional<Version> v = Version::try_parse(product_name.substr(at + 5, end - at - 5)))
      return v->to_string();
  }
  return "";
}

// The version a DLL's VERSIONINFO states, without loading it; "" when it has none or is not a DLL.
// A CUDA release in its ProductName comes first.
std::string file_version(const fs::path& p, std::string* problem = nullptr) {
  try {
    const PeFile pe = read_pe_file(p);
    if (pe.machine != 0x8664) {
      if (problem) *problem = "is " + pe.machine_name() + ", not x64";
      return "";
    }
    if (!pe.version) return "";
    const auto product = pe.version->strings.find("ProductName");
    if (product != pe.version->strings.end()) {
      if (const std::string release = cuda_release_in(product->second); !release.empty()) return release;
    }
    return pe.version->file_version();
  } catch (const InputError& e) {
    if (problem) *problem = e.problem();
    return "";
  }
}

// Every file named `name` in the search order and in the folders off it, in that order. A copy
// off the search order that a folder's `use` says how to reach carries it as its problem
// (diagnosis.cpp names it and gives it as the fix).
std::vector<LibraryCopy> copies_of(const std::string& name, const Folders& f) {
  std::vector<LibraryCopy> out;
  auto add = [&](const fs::path& dir, const std::string& role, bool on_path, const std::string& use) {
    std::error_code ec;
    const fs::path file = dir / wide(name);
    if (!fs::is_regular_file(file, ec)) return;
    for (const LibraryCopy& c : out) {
      if (same_folder(wide(c.path).parent_path(), dir)) return;
    }
    LibraryCopy c{name, utf8(fs::weakly_canonical(file, ec)), role, on_path, "", ""};
    c.version = file_version(file, &c.problem);
    if (c.problem.empty() && !on_path) c.problem = use;
    out.push_back(std::move(c));
  };
  for (const DllFolder& d : f.order.folders) add(d.path, d.role, true, "");
  for (const OffPathFolder& d : f.off_path) {
    const bool on_path = in_search_order(d.path, f);
    add(d.path, d.role, on_path, d.use);
  }
  return out;
}

// Where CUDA_PATH and CUDA_PATH_V* point when none holds `name`: a folder that does not exist (a
// toolkit since removed), or a toolkit of another CUDA release. As copies with a problem, which
// the report names.
void add_cuda_variables(const std::string& name, const Folders& f, std::vector<LibraryCopy>& copies) {
  std::vector<std::string> seen;
  for (const auto& [variable, value] : f.cuda_variables) {
    if (std::find(seen.begin(), seen.end(), value) != seen.end()) continue;  // CUDA_PATH is one of CUDA_PATH_V*
    seen.push_back(value);
    const fs::path bin = wide(value) / "bin";
    std::error_code ec;
    if (fs::is_regular_file(bin / wide(name), ec)) continue;  // copies_of has it
    std::string problem;
    if (!fs::is_directory(wide(value), ec)) {
      problem = "that folder does not exist";
    } else {
      problem = "not there";
      // CUDA_PATH_V12_4: the installer's name for the CUDA 12.4 toolkit.
      if (variable.rfind("CUDA_PATH_V", 0) == 0) {
        std::string release = variable.substr(11);
        std::replace(release.begin(), release.end(), '_', '.');
        problem += ": it is the CUDA " + release + " toolkit";
      }
    }
    copies.push_back({name, utf8(bin / wide(name)), variable + " (" + value + ")", false, "", problem});
  }
}

// The role of the search-order folder holding `file` ("PATH entry 2 (C:\x)"), or "".
std::string origin_of(const std::string& file, const Folders& f) {
  const fs::path dir = wide(file).parent_path();
  for (const DllFolder& d : f.order.folders) {
    if (same_folder(d.path, dir)) return d.role + " (" + utf8(d.path) + ")";
  }
  return "";
}

// Fills lib from a child that loaded `name`: where it came from, why it did not load (a missing
// dependent DLL named from the import tables), a crash or hang, the other copies.
void read_library(const IsolatedResult& r, const std::string& name, const Folders& f, LibraryProbe& lib) {
  lib.soname = name;
  lib.path = r.value("path");
  lib.loaded = !lib.path.empty();
  lib.output = r.output;
  lib.copies = copies_of(name, f);
  if (!lib.loaded) {
    lib.error = r.value("error");
    const std::optional<FoundDll> found = find_dll(name, f.order);
    if (r.value("error_code") == "126" || r.value("error_code") == "193") {
      // A dependent DLL missing or unusable: error 126/193 does not say which; the import tables do.
      const LoadDiagnosis d = diagnose_load(name, f.order);
      if (!d.loads && d.chain.size() > 1) lib.error += "; " + d.describe();
    }
    if (found && !r.finished()) {
      lib.broken_file = utf8(found->path);
      lib.broken = lib.broken_file + " " + r.failure();
    } else if (found && r.value("error_code") == "193") {
      lib.broken_file = utf8(found->path);
      std::string problem;
      file_version(found->path, &problem);
      lib.broken = "not a DLL for this program: " + lib.broken_file + (problem.empty() ? "" : " (" + problem + ")");
    }
    if (found && lib.broken.empty() && r.finished()) {
      // The file is there and LoadLibraryExW failed for a reason of the file's own (its DllMain):
      // named with what it did, not reported as missing.
      const std::string code = r.value("error_code");
      std::string what;
      if (code == "1114")
        what =
            "its DllMain, or that of a DLL it loads, returned FALSE (LoadLibraryExW: Windows error 1114, "
            "ERROR_DLL_INIT_FAILED)";
      else if (code == "998")
        what =
            "it faulted while loading, in its DllMain or that of a DLL it loads (LoadLibraryExW: Windows error "
            "998, ERROR_NOACCESS: an access violation the loader caught)";
      else if (!code.empty() && code != "126" && code != "2" && code != "3")
        what = "LoadLibraryExW failed with " + lib.error;
      if (!what.empty()) {
        lib.broken_file = utf8(found->path);
        lib.broken = lib.broken_file + ": " + what;
      }
    }
    if (lib.error.empty() && !r.finished()) lib.error = r.failure();
    return;
  }
  // The copies are the others: not the loaded file.
  lib.copies.erase(std::remove_if(lib.copies.begin(), lib.copies.end(),
                                  [&](const LibraryCopy& c) { return same_file(c.path, lib.path); }),
                   lib.copies.end());
  if (!r.finished()) {
    lib.broken_file = !r.fault_file.empty() ? r.fault_file : lib.path;
    lib.broken = (r.fault_file.empty() ? lib.path + ": " : "") + r.failure();
  }
}

// "13.0" from cudaRuntimeGetVersion's 13000.
std::string cuda_major_minor(long long v) { return cuda_version_string(static_cast<int>(v)); }

// cuDNN's own count from a VERSIONINFO "9.19.0.56": 91900 (cuDNN 9), 8907 (cuDNN 8).
std::optional<long> cudnn_code_of(const std::string& file_version) {
  const std::optional<Version> v = Version::try_parse(file_version);
  if (!v || v->parts().size() < 3) return std::nullopt;
  return cudnn_version_code(static_cast<long>(v->parts()[0]), static_cast<long>(v->parts()[1]),
                            static_cast<long>(v->parts()[2]));
}

int major_of(const std::string& version, int fallback) {
  const std::optional<Version> v = Version::try_parse(version);
  return v && !v->parts().empty() ? static_cast<int>(v->parts()[0]) : fallback;
}

std::string cudart_name(int major) {
  // CUDA 11 named it after 11.0 (cudart64_110.dll); 12 and later after the major.
  return "cudart64_" + (major == 11 ? std::string("110") : std::to_string(major)) + ".dll";
}

std::string read_os() {
  using RtlGetVersionFn = LONG(WINAPI*)(OSVERSIONINFOW*);
  OSVERSIONINFOW v{};
  v.dwOSVersionInfoSize = sizeof v;
  const HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
  auto get = ntdll ? symbol<RtlGetVersionFn>(ntdll, "RtlGetVersion") : nullptr;
  if (!get || get(&v) != 0) return "Windows";
  return "Windows " + std::to_string(v.dwMajorVersion) + "." + std::to_string(v.dwMinorVersion) + " (build " +
         std::to_string(v.dwBuildNumber) + ")";
}

std::string read_arch() {
  SYSTEM_INFO si{};
  GetNativeSystemInfo(&si);
  switch (si.wProcessorArchitecture) {
    case PROCESSOR_ARCHITECTURE_AMD64: return "x86_64";
    case PROCESSOR_ARCHITECTURE_ARM64: return "aarch64";
    case PROCESSOR_ARCHITECTURE_INTEL: return "x86";
    default: return "architecture " + std::to_string(si.wProcessorArchitecture);
  }
}

void read_driver(const IsolatedResult& r, const Folders& f, MachineProbe& m) {
  read_library(r, "nvcuda.dll", f, m.libcuda);
  // The loader's copies of nvcuda.dll outside System32 are never used: the runtime loads System32's.
  m.libcuda.copies.clear();
  if (const auto v = r.number("driver_cuda")) m.driver_cuda = static_cast<int>(*v);
  if (const auto v = r.number("cuda_init")) {
    m.cuda_init = static_cast<int>(*v);
    if (*v != 0) m.cuda_init_error = "cuInit: CUDA error " + std::to_string(*v);
  }
  if (const auto v = r.number("device_count")) m.cuda_device_count = static_cast<int>(*v);
  for (int i = 0; m.cuda_device_count && i < *m.cuda_device_count; ++i) {
    const std::string k = "gpu" + std::to_string(i) + ".";
    if (!r.has(k + "name")) continue;
    GpuProbe g{r.value(k + "name"), "", r.value(k + "cc"), std::nullopt, "CUDA device " + std::to_string(i)};
    if (const auto mib = r.number(k + "mib")) g.memory_mib = static_cast<std::uint64_t>(*mib);
    m.gpus.push_back(std::move(g));
  }
  m.gpus_known = m.cuda_device_count.has_value();
}

void read_nvml(const IsolatedResult& r, const Folders& f, MachineProbe& m) {
  read_library(r, "nvml.dll", f, m.libnvml);
  m.libnvml.copies.clear();
  if (!m.libnvml.loaded && r.has("nvsmi.path")) {
    m.libnvml.loaded = true;
    m.libnvml.path = r.value("nvsmi.path");
  }
  if (const auto v = r.number("nvml_init")) m.nvml_init = static_cast<int>(*v);
  if (r.has("driver_release")) {
    m.driver_release = r.value("driver_release");
    m.driver_release_source = "nvmlSystemGetDriverVersion (" + m.libnvml.path + ")";
  }
}

void read_cudart(const IsolatedResult& r, const std::string& name, const Folders& f, MachineProbe& m) {
  read_library(r, name, f, m.cudart);
  if (!m.cudart.loaded) add_cuda_variables(name, f, m.cudart.copies);
  if (const auto v = r.number("version")) {
    m.cudart_version = cuda_major_minor(*v);
    m.cudart_version_source = "cudaRuntimeGetVersion (" + m.cudart.path + ")";
  } else if (m.cudart.loaded) {
    // CUDA 13's cudaRuntimeGetVersion asks the driver first (cuGetProcAddress): without a usable
    // nvcuda.dll it fails, but the DLL's version resource still says which runtime it is.
    const std::optional<Version> resource = Version::try_parse(file_version(wide(m.cudart.path)));
    if (resource && resource->parts().size() >= 2) {
      m.cudart_version = std::to_string(resource->parts()[0]) + "." + std::to_string(resource->parts()[1]);
      m.cudart_version_source =
          "VERSIONINFO of " + m.cudart.path +
          (r.has("version_error") ? " (cudaRuntimeGetVersion returned error " + r.value("version_error") + ")"
                                  : std::string());
    }
  }
  for (int major : {13, 12, 11}) {
    const std::string other = cudart_name(major);
    if (other == name) continue;
    for (LibraryCopy& c : copies_of(other, f)) {
      if (c.on_loader_path) m.cudart_other_majors.push_back(std::move(c));
    }
  }
}

void read_cudnn(const IsolatedResult& r, const CudnnFiles& files, const Folders& f, MachineProbe& m) {
  read_library(r, files.main, f, m.cudnn);
  if (const auto v = r.number("version")) m.cudnn_version = static_cast<long>(*v);
  if (const auto v = r.number("cudart_version")) m.cudnn_cudart_version = static_cast<long>(*v);
  if (files.major >= 9) m.cudnn_version_from = files.sublibraries.front();
  // A child that ended inside cudnnGetVersion: cuDNN 9 ends the process (exit 9) when its graph
  // sub-DLL is missing or foreign; the sub-DLL rows below say which.
  if (m.cudnn.loaded && !r.finished() && m.cudnn.broken.empty()) {
    m.cudnn.broken_file = m.cudnn.path;
    m.cudnn.broken = m.cudnn.path + ": " + r.failure();
  }
  const fs::path dir = wide(m.cudnn.loaded ? m.cudnn.path : "").parent_path();
  for (const std::string& sub : files.sublibraries) {
    CudnnSublibrary s;
    s.soname = sub;
    std::error_code ec;
    s.in_cudnn_dir = m.cudnn.loaded && fs::is_regular_file(dir / wide(sub), ec);
    s.loaded_path = r.value("sub." + sub + ".path");
    const std::optional<FoundDll> found = find_dll(sub, f.order);
    // A child that ended early never got to this sub-DLL: where the search order finds it is where cuDNN takes it.
    const std::string file = !s.loaded_path.empty() ? s.loaded_path : found ? utf8(found->path) : "";
    if (!file.empty()) {
      s.origin = origin_of(file, f);
      std::string problem;
      if (const std::optional<long> v = cudnn_code_of(file_version(wide(file), &problem))) s.version = v;
      if (!problem.empty()) s.problem = "not a library: " + file + " (" + problem + ")";
      if (s.loaded_path.empty() && r.finished() && r.has("sub." + sub + ".error"))
        s.problem = "could not be loaded: " + r.value("sub." + sub + ".error");
      else if (s.loaded_path.empty())
        s.loaded_path = file;
    } else if (m.cudnn.loaded) {
      s.problem = "not found: no folder of the DLL search order holds it";
    }
    for (const LibraryCopy& c : copies_of(sub, f)) {
      if (c.on_loader_path && !same_folder(wide(c.path), wide(file))) s.other_copies.push_back(c.path);
    }
    m.cudnn_sublibraries.push_back(std::move(s));
  }
  // The other majors of cuDNN on the search order, with their versions and what they lack.
  for (const CudnnFiles& other : facts().cudnn_files) {
    if (other.os != "windows" || other.major == files.major) continue;
    for (LibraryCopy& c : copies_of(other.main, f)) {
      if (!c.on_loader_path) continue;
      std::vector<std::string> missing;
      for (const std::string& sub : other.sublibraries) {
        if (!find_dll(sub, f.order)) missing.push_back(sub);
      }
      if (!missing.empty()) {
        c.problem = "its " + missing.front() +
                    (missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more" : "") +
                    " missing from the DLL search order (" + c.soname + " would stop with \"Could not locate " +
                    missing.front() + "\")";
      }
      m.cudnn_other_majors.push_back(std::move(c));
    }
  }
}

}  // namespace

const MachineProbe& probe_machine(const BuildInfo& build) {
  static std::unique_ptr<MachineProbe> cached;
  if (cached && cached->build.cuda == build.cuda && cached->build.cudnn == build.cudnn &&
      cached->build.compiler == build.compiler && cached->build.cudnn_major == build.cudnn_major) {
    return *cached;
  }
  auto m = std::make_unique<MachineProbe>();
  m->platform = Platform::Windows;
  m->build = build;
  m->os = read_os();
  m->arch = read_arch();
  m->path_entries = split_path(env(L"PATH"));
  const Folders folders = search_folders(*m);

  const int cuda_major = major_of(build.cuda, 13);
  const int cudnn_major = major_of(build.cudnn, build.cudnn_major ? build.cudnn_major : 9);
  const CudnnFiles* files = facts().cudnn_files_for(cudnn_major, "windows");
  if (!files) files = facts().cudnn_files_for(9, "windows");
  const std::string cudart = cudart_name(cuda_major);
  std::vector<std::string> cudnn_args{files->main};
  cudnn_args.insert(cudnn_args.end(), files->sublibraries.begin(), files->sublibraries.end());
  const std::string nvsmi = env(L"ProgramFiles") + "\\NVIDIA Corporation\\NVSMI\\nvml.dll";
  const std::vector<ChildCall> calls{{"driver", {}}, {"nvml", {nvsmi}}, {"cudart", {cudart}}, {"cudnn", cudnn_args}};
  const std::vector<IsolatedResult> results = run_isolated(calls, probe_timeout());
  read_driver(results[0], folders, *m);
  read_nvml(results[1], folders, *m);
  read_cudart(results[2], cudart, folders, *m);
  read_cudnn(results[3], *files, folders, *m);
  cached = std::move(m);
  return *cached;
}

}  // namespace infer::manifest

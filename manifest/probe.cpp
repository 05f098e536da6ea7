#include "manifest/probe.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <sys/utsname.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "manifest/library_files.h"
#include "manifest/probe_parts.h"

namespace infer::manifest {

namespace detail {
namespace {

namespace fs = std::filesystem;

struct LoadedSearch {
  const std::string* file_name;
  std::string found;
};

// The link map names a library that the loader found through an empty LD_LIBRARY_PATH entry by a
// relative name ("libcudnn.so.9"), opened from the current folder: the path that names it anywhere.
std::string absolute_loaded(const std::string& name) {
  return name.empty() || fs::path(name).is_absolute() ? name : absolute_normal(name);
}

int find_loaded(dl_phdr_info* info, std::size_t, void* data) {
  auto* s = static_cast<LoadedSearch*>(data);
  if (info->dlpi_name && *info->dlpi_name && fs::path(info->dlpi_name).filename() == *s->file_name) {
    s->found = absolute_loaded(info->dlpi_name);
  }
  return 0;
}

// The first file named `soname` in the loader's folders: the one it tried, when it did not say.
std::string first_on_loader_path(const std::string& soname) {
  for (const SearchFolder& f : loader_folders(soname)) {
    std::error_code ec;
    if (fs::exists(fs::path(f.path) / soname, ec)) return (fs::path(f.path) / soname).string();
  }
  return "";
}

}  // namespace

void* child_open(const ChildChannel& ch, const std::string& name, const std::string& prefix) {
  // A file cut short is refused from its own headers before any load is tried: mapping it would
  // fault (SIGBUS) on the first page past its end, which says nothing about the file.
  ch.step("read the ELF headers of " + name);
  const std::string file = name.find('/') != std::string::npos ? name : first_on_loader_path(name);
  if (!file.empty()) {
    if (const std::string what = describe_non_library(file); what.rfind("truncated", 0) == 0) {
      ch.put(prefix + "dlerror", file + ": " + what);
      return nullptr;
    }
  }
  ch.step("dlopen " + name);
  dlerror();
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    ch.put(prefix + "dlerror", e ? e : name + ": cannot be loaded");
    return nullptr;
  }
  link_map* map = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
    ch.put(prefix + "path", absolute_loaded(map->l_name));
  using Identity = const char* (*)();
  if (auto identity = reinterpret_cast<Identity>(dlsym(h, "infer_standin_identity"))) {
    ch.put(prefix + "standin", identity());
  }
  return h;
}

std::string loaded_object(const std::string& file_name) {
  LoadedSearch s{&file_name, ""};
  dl_iterate_phdr(find_loaded, &s);
  return s.found;
}

std::string broken_text(const IsolatedResult& r, const std::string& file) {
  // A crash inside a file cut short is that file's damage, not a crash of the library (a load maps
  // pages past its end and faults on them): say what the file is, from its own headers.
  if (!r.fault_file.empty()) {
    if (const std::string what = describe_non_library(r.fault_file); !what.empty()) {
      return "not a library: " + r.fault_file + " (" + what + ")";
    }
  }
  std::string text = r.failure();
  if (r.fault_file.empty() && !file.empty()) text = file + ": " + text;
  return text;
}

void read_library(const IsolatedResult& r, const std::string& soname, LibraryProbe& lib) {
  lib.soname = soname;
  lib.path = r.value("path");
  lib.loaded = !lib.path.empty() && r.finished();
  lib.error = r.value("dlerror");
  lib.standin = r.value("standin");
  lib.output = r.output;
  if (!r.finished()) {
    // A hang or crash inside dlopen leaves no path: name the file the loader was opening.
    const std::string file = !lib.path.empty() ? lib.path : first_on_loader_path(soname);
    lib.broken_file = !r.fault_file.empty() ? r.fault_file : !file.empty() ? file : soname;
    lib.broken = broken_text(r, file.empty() ? soname : file);
    return;
  }
  // dlopen refused a file the loader found first ("file too short", "invalid ELF header"): say what it is.
  std::string file = file_in_dlerror(lib.error);
  if (file.empty() && !lib.error.empty() && lib.error.find("cannot open shared object file") == std::string::npos) {
    // The loader names a file by its bare name when it came from an empty LD_LIBRARY_PATH entry
    // (the current folder): the first file of that name on the search path is the one refused.
    file = first_on_loader_path(soname);
  }
  if (!file.empty()) {
    const std::string what = describe_non_library(file);
    if (!what.empty()) {
      lib.broken_file = file;
      lib.broken = "not a library: " + file + " (" + what + ")";
    }
  }
  // A file the loader mapped may still be cut short past what loading touches: it would fault later.
  if (lib.loaded) {
    if (const std::string what = describe_non_library(lib.path); !what.empty()) {
      lib.broken_file = lib.path;
      lib.broken = "damaged library: " + lib.path + " (" + what + ")";
    }
  }
}

}  // namespace detail

namespace {

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

}  // namespace

const MachineProbe& probe_machine(const BuildInfo& build) {
  // One probe per build asked about (one per GPU backend): a reference handed out stays valid.
  static std::map<std::string, std::unique_ptr<MachineProbe>> cache;
  const std::string key = build.cuda + "|" + build.cudnn + "|" + build.compiler + "|" +
                          std::to_string(build.cuda_major) + "|" + std::to_string(build.cudnn_major);
  if (const auto it = cache.find(key); it != cache.end()) return *it->second;
  auto m = std::make_unique<MachineProbe>();
  m->build = build;
  m->os = read_os();
  utsname u{};
  if (uname(&u) == 0) m->arch = u.machine;
  m->glibc = gnu_get_libc_version();

  std::vector<detail::Job> jobs = detail::driver_jobs();
  for (auto& j : detail::cudart_jobs(*m)) jobs.push_back(std::move(j));
  for (auto& j : detail::cudnn_jobs(*m)) jobs.push_back(std::move(j));
  std::vector<ChildBody> bodies;
  for (const detail::Job& j : jobs) {
    if (j.body) bodies.push_back(j.body);
  }
  const std::vector<IsolatedResult> results = run_isolated(bodies, probe_timeout());
  std::size_t next = 0;
  for (const detail::Job& j : jobs) j.read(j.body ? results[next++] : IsolatedResult{}, *m);
  detail::finish_driver(*m);
  detail::finish_runtime(*m);
  return *cache.emplace(key, std::move(m)).first->second;
}

}  // namespace infer::manifest

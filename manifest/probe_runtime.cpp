// The CUDA runtime and cuDNN: the copy the loader picks, each cuDNN sub-library, the other copies
// with the same name and the other majors, each probed in a child of its own.
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "manifest/constraint.h"
#include "manifest/facts.h"
#include "manifest/library_files.h"
#include "manifest/probe_parts.h"
#include "platform/nvidia_versions.h"

namespace infer::manifest::detail {
namespace {

namespace fs = std::filesystem;

using CudaRuntimeGetVersion = int (*)(int*);
using CudnnGetSize = std::size_t (*)();
using CudnnVersionCheck = int (*)();

constexpr std::size_t kMaxCopies = 6;  // per file name: enough for any real machine, bounded for a strange one

// The major version in "13.0.88", or fallback.
int major_of(const std::string& version, int fallback) {
  const std::optional<Version> v = Version::try_parse(version);
  return v && !v->parts().empty() ? static_cast<int>(v->parts()[0]) : fallback;
}

// A sub-library's own version symbol: 4 bytes, major << 16 | minor << 8 | patch (facts.toml),
// recorded as cudnnGetVersion counts it (9.19.0 -> 91900).
void put_own_version(const ChildChannel& ch, const std::string& path, const std::string& symbol,
                     const std::string& key) {
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  const void* p = dlsym(h, symbol.c_str());
  if (!p) return;
  ch.step("read " + symbol + " in " + path);
  std::uint32_t v = 0;
  std::memcpy(&v, p, sizeof v);
  ch.put(key, std::to_string(cudnn_version_code(v >> 16, (v >> 8) & 0xff, v & 0xff)));
}

// The version in a library's real file name, as cudnnGetVersion counts it: libcudnn.so.8.9.6 -> 8906.
std::optional<long> version_in_file_name(const std::string& path) {
  std::error_code ec;
  const std::string name = fs::canonical(path, ec).filename().string();
  const std::size_t so = name.find(".so.");
  if (ec || so == std::string::npos) return std::nullopt;
  const std::optional<Version> v = Version::try_parse(name.substr(so + 4));
  if (!v || v->parts().size() < 3) return std::nullopt;
  return cudnn_version_code(static_cast<long>(v->parts()[0]), static_cast<long>(v->parts()[1]),
                            static_cast<long>(v->parts()[2]));
}

// The cuDNN version of the copy at `path` without calling into it when its graph library is next
// to it (the front aborts when a sub-library is missing); else through cudnnGetVersion.
void copy_version_body(const ChildChannel& ch, const std::string& path, const CudnnFiles* files) {
  void* h = child_open(ch, path);
  if (!h) return;
  // Tarballs and packages name the real file with the full version (libcudnn.so.8 ->
  // libcudnn.so.8.9.6): read from there, the front is not called (it aborts without its sub-libraries).
  if (const std::optional<long> v = version_in_file_name(path)) {
    ch.put("version", std::to_string(*v));
    ch.put("version_source", "file name");
    return;
  }
  if (files && !files->version_from.empty()) {
    const fs::path graph = fs::path(path).parent_path() / files->version_from;
    const auto symbol = files->version_symbols.find(files->version_from);
    std::error_code ec;
    if (symbol != files->version_symbols.end() && fs::exists(graph, ec)) {
      put_own_version(ch, graph.string(), symbol->second, "version");
      if (auto f = reinterpret_cast<CudnnGetSize>(
              dlsym(dlopen(graph.c_str(), RTLD_LAZY | RTLD_NOLOAD), "cudnnGetCudartVersion"))) {
        ch.put("cudart", std::to_string(f()));
      }
      return;
    }
  }
  if (auto f = reinterpret_cast<CudnnGetSize>(dlsym(h, "cudnnGetVersion"))) {
    ch.step("cudnnGetVersion in " + path);
    ch.put("version", std::to_string(f()));
  }
}

void cudart_version_body(const ChildChannel& ch, const std::string& name) {
  void* h = child_open(ch, name);
  if (!h) return;
  if (auto f = reinterpret_cast<CudaRuntimeGetVersion>(dlsym(h, "cudaRuntimeGetVersion"))) {
    ch.step("cudaRuntimeGetVersion in " + name);
    int v = 0;
    const int rc = f(&v);
    ch.put("rc", std::to_string(rc));
    if (rc == 0) ch.put("version", std::to_string(v));
  }
}

// A cudaRuntimeGetVersion / cudnnGetCudartVersion value of the given major (13.0 = 13000).
bool plausible_cuda(long long v, int major) { return v >= major * 1000LL && v < (major + 1) * 1000LL; }

// Jobs for every file named `name` the loader or a Python environment could provide, at most
// kMaxCopies. `body` says in a child what the file at a path is; `version_of` reads that back.
// Copies of the build's own major on the loader path are only listed (cuda/cudnn.single_copy
// shows their paths): probing them would load the same library again at every start.
void add_copy_jobs(const std::string& name, bool other_major, std::vector<Job>& jobs,
                   std::function<void(const ChildChannel&, const std::string&)> body,
                   std::function<std::string(const IsolatedResult&)> version_of,
                   std::function<std::vector<LibraryCopy>&(MachineProbe&)> list) {
  std::vector<FoundFile> files = find_library_files(name);
  if (files.size() > kMaxCopies) files.resize(kMaxCopies);
  for (const FoundFile& f : files) {
    LibraryCopy copy{name, f.path, f.folder.origin + " (" + f.folder.path + ")", f.folder.on_loader_path, "", ""};
    if (const std::string what = describe_non_library(copy.path); !what.empty())
      copy.problem = "not a library (" + what + ")";
    if (!other_major && copy.on_loader_path) {
      jobs.push_back({nullptr, [copy, list](const IsolatedResult&, MachineProbe& m) { list(m).push_back(copy); }});
      continue;
    }
    const std::string path = f.path;
    jobs.push_back({[body, path](const ChildChannel& ch) { body(ch, path); },
                    [copy, version_of, list](const IsolatedResult& r, MachineProbe& m) mutable {
                      if (copy.problem.empty() && !r.finished())
                        copy.problem = r.failure();
                      else if (copy.problem.empty() && r.has("dlerror"))
                        copy.problem = r.value("dlerror");
                      copy.version = version_of(r);
                      list(m).push_back(copy);
                    }});
  }
}

}  // namespace

std::vector<Job> cudart_jobs(const MachineProbe& machine) {
  const int major = machine.build.cuda_major != 0 ? machine.build.cuda_major : major_of(machine.build.cuda, 13);
  const std::string soname = "libcudart.so." + std::to_string(major);
  std::vector<Job> jobs;
  jobs.push_back({[soname](const ChildChannel& ch) { cudart_version_body(ch, soname); },
                  [soname, major](const IsolatedResult& r, MachineProbe& m) {
                    read_library(r, soname, m.cudart);
                    if (!m.cudart.loaded || !m.cudart.broken.empty()) return;
                    const auto v = r.number("version");
                    if (v && *v > 0 && !plausible_cuda(*v, major)) {
                      m.cudart.broken = m.cudart.path + " answered cudaRuntimeGetVersion() = " + std::to_string(*v) +
                                        ", not a CUDA " + std::to_string(major) + " version";
                      m.cudart.broken_file = m.cudart.path;
                    } else if (v && *v > 0) {
                      m.cudart_version = cuda_version_string(static_cast<int>(*v));
                      m.cudart_version_source = "cudaRuntimeGetVersion (" + m.cudart.path + ")";
                    } else {
                      // Without a driver, cudaRuntimeGetVersion may report 0: the soname still fixes the major.
                      m.cudart_version = std::to_string(major);
                      m.cudart_version_source =
                          "soname " + soname + " (" + m.cudart.path + "); cudaRuntimeGetVersion gave none";
                    }
                  }});
  auto version_of = [](const IsolatedResult& r) {
    const auto v = r.number("version");
    return v && *v > 0 && *v < 1000000 ? cuda_version_string(static_cast<int>(*v)) : std::string();
  };
  for (const int other : {major, major + 1, major - 1, major - 2}) {
    const bool other_major = other != major;
    add_copy_jobs(
        "libcudart.so." + std::to_string(other), other_major, jobs,
        [](const ChildChannel& ch, const std::string& path) { cudart_version_body(ch, path); }, version_of,
        [other_major](MachineProbe& m) -> std::vector<LibraryCopy>& {
          return other_major ? m.cudart_other_majors : m.cudart.copies;
        });
  }
  return jobs;
}

std::vector<Job> cudnn_jobs(const MachineProbe& machine) {
  const int major = major_of(machine.build.cudnn, 9);
  const CudnnFiles* files = facts().cudnn_files_for(major, "linux");
  const std::string soname = files ? files->main : "libcudnn.so." + std::to_string(major);
  const int cuda_major = machine.build.cuda_major != 0 ? machine.build.cuda_major : major_of(machine.build.cuda, 13);
  const std::string cudart = "libcudart.so." + std::to_string(cuda_major);
  std::vector<Job> jobs;
  // The front library, as the GPU backend gets it: its version and CUDA build. The backend's CUDA
  // runtime is loaded first, when there is one, as it is in the backend's process (NVIDIA's cuDNN
  // answers the same either way; the project's CPU stand-in answers for the runtime beside it).
  jobs.push_back({[soname, files, cudart](const ChildChannel& ch) {
                    ch.step("dlopen " + cudart + " (the backend's CUDA runtime, beside cuDNN)");
                    static_cast<void>(dlopen(cudart.c_str(), RTLD_NOW | RTLD_GLOBAL));
                    void* h = child_open(ch, soname);
                    if (!h) return;
                    if (auto f = reinterpret_cast<CudnnGetSize>(dlsym(h, "cudnnGetVersion"))) {
                      ch.step("cudnnGetVersion in " + soname);
                      ch.put("version", std::to_string(f()));
                    }
                    if (auto f = reinterpret_cast<CudnnGetSize>(dlsym(h, "cudnnGetCudartVersion"))) {
                      ch.step("cudnnGetCudartVersion in " + soname);
                      ch.put("cudart", std::to_string(f()));
                    }
                    if (files && !files->version_from.empty()) ch.put("from", loaded_object(files->version_from));
                  },
                  [soname, major](const IsolatedResult& r, MachineProbe& m) {
                    read_library(r, soname, m.cudnn);
                    m.cudnn_version_from = r.value("from");
                    if (!m.cudnn.broken.empty() && r.has("path") && !r.finished())
                      m.cudnn.loaded = true;  // loads, then fails
                    // Any cuDNN's version is kept, read with its major's encoding (cuDNN 8 under
                    // cuDNN 9's name answers 8200 = 8.2.0): the check says whose it is. Only a
                    // number that is no cuDNN version at all makes the library unusable.
                    const auto v = r.number("version");
                    if (r.has("version") && (!v || cudnn_version_major(*v) == 0)) {
                      m.cudnn.broken = "cudnnGetVersion() = " + r.value("version") + " from " +
                                       (m.cudnn_version_from.empty() ? m.cudnn.path : m.cudnn_version_from) +
                                       ": not a cuDNN version (cuDNN " + std::to_string(major) +
                                       " counts major*10000 + minor*100 + patch, cuDNN 8 and older major*1000 + "
                                       "minor*100 + patch)";
                      m.cudnn.broken_file = m.cudnn_version_from.empty() ? m.cudnn.path : m.cudnn_version_from;
                    } else if (v) {
                      m.cudnn_version = static_cast<long>(*v);
                    }
                    if (const auto c = r.number("cudart"); c && *c > 0 && *c < 1000000)
                      m.cudnn_cudart_version = static_cast<long>(*c);
                  }});
  // Each sub-library, in a child of its own: one that crashes or aborts leaves the others readable.
  if (files) {
    for (const std::string& sub : files->sublibraries) {
      const auto check = files->version_checks.find(sub);
      const std::string check_function = check == files->version_checks.end() ? "" : check->second;
      const auto symbol = files->version_symbols.find(sub);
      const std::string version_symbol = symbol == files->version_symbols.end() ? "" : symbol->second;
      jobs.push_back({[soname, sub, check_function, version_symbol](const ChildChannel& ch) {
                        void* front = child_open(ch, soname, "front.");
                        if (!front) return;
                        if (!check_function.empty()) {
                          // The front loads the sub-library itself, by its own search rules.
                          if (auto f = reinterpret_cast<CudnnVersionCheck>(dlsym(front, check_function.c_str()))) {
                            ch.step(check_function + "() in " + soname);
                            ch.put("check", std::to_string(f()));
                          }
                        }
                        std::string path = loaded_object(sub);
                        if (path.empty()) {
                          // Loaded on demand by cuDNN: the same search, LD_LIBRARY_PATH before the front's
                          // own folder (its RUNPATH is $ORIGIN), then the loader cache.
                          std::string candidate;
                          for (const SearchFolder& f : loader_folders(sub)) {
                            std::error_code ec;
                            if (f.origin != "ldconfig cache" && fs::exists(fs::path(f.path) / sub, ec)) {
                              candidate = (fs::path(f.path) / sub).string();
                              break;
                            }
                          }
                          std::error_code ec;
                          const fs::path beside = fs::path(loaded_object(soname)).parent_path() / sub;
                          if (candidate.empty() && fs::exists(beside, ec)) candidate = beside.string();
                          if (child_open(ch, candidate.empty() ? sub : candidate)) path = loaded_object(sub);
                        }
                        if (path.empty()) return;
                        ch.put("loaded", path);
                        if (!version_symbol.empty()) put_own_version(ch, path, version_symbol, "own");
                      },
                      [sub, check_function](const IsolatedResult& r, MachineProbe& m) {
                        CudnnSublibrary s;
                        s.soname = sub;
                        s.check_function = check_function;
                        s.loaded_path = r.value("loaded");
                        if (s.loaded_path.empty() && r.has("path")) s.loaded_path = r.value("path");
                        if (const auto c = r.number("check")) s.check = static_cast<int>(*c);
                        if (const auto v = r.number("own")) s.version = static_cast<long>(*v);
                        if (!r.finished()) {
                          s.problem = broken_text(r, s.loaded_path.empty() ? sub : s.loaded_path);
                        } else if (s.loaded_path.empty() && r.has("dlerror")) {
                          s.problem = r.value("dlerror");
                        }
                        if (const std::string file =
                                !s.loaded_path.empty() ? s.loaded_path : file_in_dlerror(r.value("dlerror"));
                            !file.empty()) {
                          if (const std::string what = describe_non_library(file); !what.empty()) {
                            s.problem = "not a library: " + file + " (" + what + ")";
                          }
                        }
                        for (const std::string& line : r.output) m.cudnn.output.push_back(sub + ": " + line);
                        m.cudnn_sublibraries.push_back(std::move(s));
                      }});
    }
  }
  // Every other file with the name, and the other majors' libraries, with what each says it is.
  for (const CudnnFiles& other : facts().cudnn_files) {
    if (other.os != "linux") continue;
    const bool other_major = other.major != major;
    const CudnnFiles* other_files = &other;
    add_copy_jobs(
        other.main, other_major, jobs,
        [other_files](const ChildChannel& ch, const std::string& path) { copy_version_body(ch, path, other_files); },
        [](const IsolatedResult& r) {
          // Whatever major the file really is (a cuDNN 8 named libcudnn.so.9 says 8.2.0).
          std::string version;
          if (const auto v = r.number("version"); v && cudnn_version_major(*v) != 0) {
            version = cudnn_version_string(static_cast<long>(*v));
            if (const auto c = r.number("cudart"); c && *c > 0 && *c < 1000000) {
              version += " for CUDA " + cuda_version_string(static_cast<int>(*c));
            }
          }
          return version;
        },
        [other_major](MachineProbe& m) -> std::vector<LibraryCopy>& {
          return other_major ? m.cudnn_other_majors : m.cudnn.copies;
        });
  }
  return jobs;
}

namespace {

std::string canonical(const std::string& path) {
  std::error_code ec;
  const fs::path c = fs::canonical(path, ec);
  return ec ? path : c.string();
}

// The copies that are not the loaded file.
void drop_loaded(LibraryProbe& lib) {
  if (!lib.loaded) return;
  const std::string mine = canonical(lib.path);
  std::vector<LibraryCopy> others;
  for (LibraryCopy& c : lib.copies) {
    if (c.path != mine) others.push_back(std::move(c));
  }
  lib.copies = std::move(others);
}

}  // namespace

void finish_runtime(MachineProbe& m) {
  drop_loaded(m.cudart);
  drop_loaded(m.cudnn);
  if (m.cudnn.path.empty()) return;
  const fs::path dir = fs::path(m.cudnn.path).parent_path();
  const std::string canon_dir = canonical(dir.string());
  for (CudnnSublibrary& s : m.cudnn_sublibraries) {
    std::error_code ec;
    s.in_cudnn_dir = fs::exists(dir / s.soname, ec);
    const std::string mine = canonical(s.loaded_path.empty() ? (dir / s.soname).string() : s.loaded_path);
    for (const FoundFile& f : find_library_files(s.soname)) {
      if (f.folder.on_loader_path && f.path != mine) s.other_copies.push_back(f.path);
    }
    if (s.loaded_path.empty() || canonical(fs::path(s.loaded_path).parent_path().string()) == canon_dir) continue;
    // Loaded from elsewhere: name the search folder that supplied it.
    const std::string loaded_dir = canonical(fs::path(s.loaded_path).parent_path().string());
    for (const SearchFolder& f : loader_folders(s.soname)) {
      if (canonical(f.path) == loaded_dir) {
        s.origin = f.origin + " (" + f.path + ")";
        break;
      }
    }
  }
}

}  // namespace infer::manifest::detail

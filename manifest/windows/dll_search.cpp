#include "manifest/windows/dll_search.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <system_error>

#include "infer/errors.h"
#include "manifest/windows/pe_file.h"

namespace infer::manifest {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_api_set(const std::string& name) {
  const std::string n = lower(name);
  return n.rfind("api-ms-win-", 0) == 0 || n.rfind("ext-ms-", 0) == 0;
}

// `name` in `folder`: the exact name, else any entry equal to it without case.
std::optional<fs::path> in_folder(const fs::path& folder, const std::string& name) {
  std::error_code ec;
  const fs::path exact = folder / fs::u8path(name);
  if (fs::is_regular_file(exact, ec)) return exact;
  const std::string want = lower(name);
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (lower(it->path().filename().u8string()) == want && it->is_regular_file(ec)) return it->path();
  }
  return std::nullopt;
}

DllSearchOrder order_from(const DllFolder& first, const fs::path& windows_dir, const fs::path& current_dir,
                          const std::vector<fs::path>& path_entries) {
  DllSearchOrder o;
  o.folders.push_back(first);
  o.folders.push_back({windows_dir / "System32", "System32", true});
  o.folders.push_back({windows_dir / "System", "the 16-bit System folder", true});
  o.folders.push_back({windows_dir, "the Windows folder", true});
  o.folders.push_back({current_dir, "the current folder", false});
  for (std::size_t i = 0; i < path_entries.size(); ++i) {
    o.folders.push_back({path_entries[i], "PATH entry " + std::to_string(i + 1), false});
  }
  return o;
}

std::string machine_name(std::uint16_t machine) {
  PeFile pe;
  pe.machine = machine;
  return pe.machine_name();
}

}  // namespace

DllSearchOrder DllSearchOrder::standard(const fs::path& application_dir, const fs::path& windows_dir,
                                        const fs::path& current_dir, const std::vector<fs::path>& path_entries) {
  return order_from({application_dir, "the application's folder", false}, windows_dir, current_dir, path_entries);
}

DllSearchOrder DllSearchOrder::altered(const fs::path& dll_dir, const fs::path& windows_dir,
                                       const fs::path& current_dir, const std::vector<fs::path>& path_entries) {
  return order_from({dll_dir, "the DLL's own folder", false}, windows_dir, current_dir, path_entries);
}

std::optional<FoundDll> find_dll(const std::string& name, const DllSearchOrder& order) {
  if (is_api_set(name)) return std::nullopt;
  for (const DllFolder& f : order.folders) {
    if (const std::optional<fs::path> p = in_folder(f.path, name)) return FoundDll{*p, f.role, f.system};
  }
  return std::nullopt;
}

std::string LoadDiagnosis::describe() const {
  if (loads) return chain.empty() ? "loads" : chain.front() + " and its dependents are found";
  std::string via;
  for (std::size_t i = 0; i + 1 < chain.size(); ++i) via += (i == 0 ? "" : " -> ") + chain[i];
  if (!missing.empty()) {
    if (chain.size() <= 1) return missing + ": no folder of the search order holds it";
    return via + " needs " + missing + ", which no folder of the search order holds";
  }
  return (chain.size() > 1 ? via + " needs " + chain.back() + ": " : std::string()) + problem;
}

LoadDiagnosis diagnose_load(const std::string& dll, const DllSearchOrder& order, std::uint16_t machine) {
  LoadDiagnosis d;
  std::set<std::string> seen;
  // Depth first, in import order, as the loader maps them; stops at the first failure.
  struct Frame {
    std::string name;
    std::vector<std::string> chain;
  };
  std::vector<Frame> stack{{dll, {}}};
  const bool by_path = fs::u8path(dll).has_parent_path();
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    const std::string key = lower(fs::u8path(f.name).filename().u8string());
    if (is_api_set(f.name) || !seen.insert(key).second) continue;
    f.chain.push_back(fs::u8path(f.name).filename().u8string());
    std::optional<FoundDll> found;
    std::error_code ec;
    if (f.chain.size() == 1 && by_path) {
      if (fs::is_regular_file(fs::u8path(dll), ec)) found = FoundDll{fs::u8path(dll), "the path given", false};
    } else {
      found = find_dll(f.name, order);
    }
    if (!found) {
      d.loads = false, d.chain = f.chain, d.missing = f.chain.back();
      return d;
    }
    d.resolved.push_back(*found);
    if (found->system) continue;  // Windows' own DLLs: their dependents are Windows' business
    PeFile pe;
    try {
      pe = read_pe_file(found->path);
    } catch (const InputError& e) {
      d.loads = false, d.chain = f.chain, d.problem = e.what();
      return d;
    }
    if (pe.machine != machine) {
      d.loads = false, d.chain = f.chain;
      d.problem = found->path.u8string() + ": is " + pe.machine_name() + ", not " + machine_name(machine) +
                  " (Windows error 193, not a valid Win32 application)";
      return d;
    }
    for (auto it = pe.imports.rbegin(); it != pe.imports.rend(); ++it) stack.push_back({*it, f.chain});
  }
  d.chain = {fs::u8path(dll).filename().u8string()};
  return d;
}

}  // namespace infer::manifest

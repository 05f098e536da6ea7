#include "manifest/facts.h"

#include <algorithm>
#include <stdexcept>

#include <toml++/toml.h>

#include "manifest/facts_data.h"

namespace infer::manifest {
namespace {

std::string need_string(const toml::table& t, const char* key) {
  const auto v = t[key].value<std::string>();
  if (!v) throw std::logic_error(std::string("manifest/facts.toml: missing string '") + key + "'");
  return *v;
}

Facts load() {
  const toml::table root = toml::parse(std::string_view(kFactsToml), std::string_view("manifest/facts.toml"));
  Facts f;
  if (const toml::array* rows = root["cuda_driver"].as_array()) {
    for (const toml::node& n : *rows) {
      const toml::table& t = *n.as_table();
      f.driver_floors.push_back({need_string(t, "os"), Version::parse(need_string(t, "cuda")),
                                 Version::parse(need_string(t, "min_driver")), need_string(t, "source"),
                                 t["verified"].value_or(false)});
    }
  }
  std::sort(f.driver_floors.begin(), f.driver_floors.end(),
            [](const DriverFloor& a, const DriverFloor& b) { return b.cuda < a.cuda; });
  if (const toml::array* rows = root["cuda_compute_capability"].as_array()) {
    for (const toml::node& n : *rows) {
      const toml::table& t = *n.as_table();
      f.cc_floor[t["cuda_major"].value_or(0)] = {Version::parse(need_string(t, "min")), need_string(t, "source")};
    }
  }
  if (const toml::array* rows = root["cudnn"].as_array()) {
    for (const toml::node& n : *rows) {
      const toml::table& t = *n.as_table();
      std::vector<int> majors;
      if (const toml::array* a = t["cuda_majors"].as_array()) {
        for (const toml::node& m : *a) majors.push_back(m.value_or(0));
      }
      f.cudnn_cuda_majors[t["major"].value_or(0)] = majors;
    }
  }
  if (const toml::array* rows = root["cudnn_build"].as_array()) {
    for (const toml::node& n : *rows) {
      const toml::table& t = *n.as_table();
      f.cudnn_builds.push_back({t["cuda_major"].value_or(0), Constraint::parse(need_string(t, "versions")),
                                Version::parse(need_string(t, "min_compute_capability")), need_string(t, "source")});
    }
  }
  if (const toml::array* rows = root["cudnn_files"].as_array()) {
    for (const toml::node& n : *rows) {
      const toml::table& t = *n.as_table();
      CudnnFiles files;
      files.major = t["major"].value_or(0);
      files.os = need_string(t, "os");
      files.main = need_string(t, "main");
      if (const toml::array* a = t["sublibraries"].as_array()) {
        for (const toml::node& m : *a) files.sublibraries.push_back(m.value_or(std::string()));
      }
      if (const toml::table* checks = t["version_checks"].as_table()) {
        for (const auto& [k, v] : *checks) files.version_checks[std::string(k.str())] = v.value_or(std::string());
      }
      if (const toml::table* symbols = t["version_symbols"].as_table()) {
        for (const auto& [k, v] : *symbols) files.version_symbols[std::string(k.str())] = v.value_or(std::string());
      }
      files.version_from = t["version_from"].value_or(std::string());
      if (const toml::table* needs = t["needs"].as_table()) {
        for (const auto& [k, v] : *needs) {
          if (const toml::array* a = v.as_array()) {
            for (const toml::node& item : *a) files.needs[std::string(k.str())].push_back(item.value_or(std::string()));
          }
        }
      }
      f.cudnn_files.push_back(std::move(files));
    }
  }
  return f;
}

}  // namespace

const DriverFloor* Facts::driver_floor_for(const Version& cuda_runtime, const std::string& os) const {
  for (const DriverFloor& row : driver_floors) {
    if (row.os == os && row.cuda.compare(cuda_runtime) <= 0) return &row;
  }
  return nullptr;
}

const CudnnBuild* Facts::cudnn_build_for(int cuda_major, const Version& cudnn) const {
  for (const CudnnBuild& row : cudnn_builds) {
    if (row.cuda_major == cuda_major && row.versions.allows(cudnn)) return &row;
  }
  return nullptr;
}

const CudnnFiles* Facts::cudnn_files_for(int major, const std::string& os) const {
  for (const CudnnFiles& row : cudnn_files) {
    if (row.major == major && row.os == os) return &row;
  }
  return nullptr;
}

const Facts& facts() {
  static const Facts parsed = load();
  return parsed;
}

}  // namespace infer::manifest

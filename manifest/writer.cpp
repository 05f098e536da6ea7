#include "manifest/writer.h"
#include "platform/nvidia_versions.h"

#include <ctime>
#include <sstream>

#include "manifest/constraint.h"
#include "manifest/facts.h"
#include "infer/errors.h"
#include "manifest/sha256.h"

namespace infer::manifest {
namespace {

namespace fs = std::filesystem;

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string item(const std::string& key, const std::string& want, bool required, const std::string& comment = "") {
  std::string line =
      key + " = " + (required ? quoted(want) : "{ want = " + quoted(want) + ", severity = \"advisory\" }");
  if (!comment.empty()) line += "   # " + comment;
  return line + "\n";
}

std::string rule(const std::string& key, bool required, const std::string& comment = "") {
  return key + " = " + quoted(required ? "required" : "advisory") + (comment.empty() ? "" : "   # " + comment) + "\n";
}

// "13.0" from "13.0.88"; "13" stays "13".
std::string major_minor(const std::string& v) {
  const std::optional<Version> p = Version::try_parse(v);
  if (!p || p->parts().size() < 2) return v;
  return std::to_string(p->parts()[0]) + "." + std::to_string(p->parts()[1]);
}

}  // namespace

std::string manifest_text(const MachineProbe& m, const fs::path& manifest_path,
                          const std::vector<fs::path>& model_files, const std::string& backend_note) {
  std::ostringstream out;  // the machine's part: [system], [gpu]
  std::ostringstream own;  // the backend's part: [backend.driver], [backend.gpu], [backend.cuda], [backend.cudnn]
  const int major = m.build.cuda_major != 0 ? m.build.cuda_major
                    : !m.build.cuda.empty() ? static_cast<int>(Version::parse(m.build.cuda).parts()[0])
                                            : 13;
  const std::time_t now = std::time(nullptr);
  char date[32] = "";
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  out << "# VERSIONS.toml written by `infer --write-manifest` on " << date << ".\n"
      << "# It describes the machine it was written on; `infer --check --manifest THIS_FILE` passes there.\n"
      << "# Items marked \"not found when written\" are advisory: make them required (remove the severity)\n"
      << "# once you have checked them on a machine that has them. Schema: docs/manifest.md.\n"
      << "schema = 2\n\n[system]\n";
  const bool windows = m.platform == Platform::Windows;
  out << item("os", m.os, false) << item("arch", m.arch, true);
  if (!windows) out << item("glibc", ">=" + m.glibc, false, "gnu_get_libc_version");
  if (!m.build.compiler.empty()) out << item("compiler", m.build.compiler, false);

  own << "\n[backend.driver]\n";
  const std::optional<Version> rv =
      m.cudart_version ? Version::try_parse(*m.cudart_version) : Version::try_parse(m.build.cuda);
  const DriverFloor* floor = rv ? facts().driver_floor_for(*rv, words(m.platform).name) : nullptr;
  if (m.driver_release) {
    own << item("release", ">=" + *m.driver_release, true, "found: " + m.driver_release_source);
  } else {
    const std::string why = m.libcuda.loaded ? "release unreadable" : m.libcuda.soname + " not found";
    own << "# not found when written (" << why << "): the floor below is the driver this CUDA runtime needs\n";
    own << item("release", ">=" + (floor ? floor->min_driver.to_string() : std::string("0")), false);
  }
  if (m.driver_cuda) {
    own << item("cuda", ">=" + cuda_version_string(*m.driver_cuda), true, "cuDriverGetVersion");
    own << rule("runtime_compatible", true);
  } else {
    own << "# not found when written (" << m.libcuda.soname << " not found)\n"
        << item("cuda", ">=" + (rv ? major_minor(rv->to_string()) : std::string("0")), false)
        << rule("runtime_compatible", false, "not found when written");
  }

  out << "\n[gpu]\n";
  if (m.cuda_device_count && *m.cuda_device_count > 0) {
    out << item("count", ">=1", true);
  } else {
    out << "# no GPU visible when written\n" << item("count", ">=1", false);
  }
  std::optional<Version> min_cc;
  std::optional<std::uint64_t> min_mem;
  std::vector<std::string> names;
  for (const GpuProbe& g : m.gpus) {
    if (g.compute_capability) {
      const std::optional<Version> cc = Version::try_parse(*g.compute_capability);
      if (cc && (!min_cc || *cc < *min_cc)) min_cc = cc;
    }
    if (g.memory_mib && (!min_mem || *g.memory_mib < *min_mem)) min_mem = g.memory_mib;
    names.push_back(g.name);
  }
  own << "\n[backend.gpu]\n";
  if (min_cc) {
    own << item("compute_capability", ">=" + min_cc->to_string(), true, "lowest found");
  } else {
    const auto it = rv ? facts().cc_floor.find(static_cast<int>(rv->parts()[0])) : facts().cc_floor.end();
    own << "# not found when written: the floor of this CUDA major\n"
        << item("compute_capability",
                ">=" + (it != facts().cc_floor.end() ? it->second.first.to_string() : std::string("0")), false);
  }
  if (!names.empty()) {
    out << "name = { want = [";
    for (std::size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << quoted(names[i]);
    out << "], severity = \"advisory\" }\n";
  }
  if (min_mem) out << item("memory_mib", ">=" + std::to_string(*min_mem), false, "smallest GPU");

  own << "\n[backend.cuda]\n";
  if (!m.build.cuda.empty()) own << item("built", m.build.cuda, true);
  if (m.cudart.loaded && m.cudart_version) {
    own << item("runtime", major_minor(*m.cudart_version) + ".*", true, "found: " + m.cudart.path);
    own << rule("single_copy", false);
  } else {
    own << "# not found when written (" << m.cudart.soname << ")\n"
        << item("runtime", m.build.cuda.empty() ? "*" : major_minor(m.build.cuda) + ".*", false);
  }

  own << "\n[backend.cudnn]\n";
  if (!m.build.cudnn.empty()) own << item("built", m.build.cudnn, true);
  if (m.cudnn.loaded && m.cudnn_version) {
    const std::string v = cudnn_version_string(*m.cudnn_version);
    const Version p = Version::parse(v);
    own << item("version", ">=" + v + ", <" + std::to_string(p.parts()[0] + 1), true, "found: " + m.cudnn.path);
    if (!m.build.cudnn.empty()) own << rule("runtime_compatible", true);
    if (m.cudnn_cudart_version) own << item("cuda_major", std::to_string(*m.cudnn_cudart_version / 1000), true);
    own << rule("sublibraries", true) << rule("single_copy", false);
  } else {
    own << "# not found when written (" << m.cudnn.soname << ")\n"
        << item("version",
                m.build.cudnn.empty() ? "*"
                                      : ">=" + major_minor(m.build.cudnn) + ", <" +
                                            std::to_string(Version::parse(m.build.cudnn).parts()[0] + 1),
                false);
  }

  out << "\n[[backend]]\nname = " << quoted("cu" + std::to_string(major));
  if (!backend_note.empty()) {
    std::string note = backend_note;  // a TOML comment ends at the line's end
    for (char& c : note) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    out << "   # " << note;
  }
  out << "\n" << own.str();

  if (!model_files.empty())
    out << "\n# The model files and their SHA-256; the loader refuses a listed file whose digest differs.\n";
  const fs::path dir = fs::absolute(manifest_path).parent_path();
  for (const fs::path& f : model_files) {
    std::error_code ec;
    if (!fs::exists(f, ec)) {
      out << "# not found when written: " << f.u8string() << "\n";
      continue;
    }
    std::string rel = fs::relative(fs::weakly_canonical(f, ec), fs::weakly_canonical(dir, ec), ec).generic_u8string();
    if (ec || rel.empty()) rel = fs::absolute(f).generic_u8string();
    out << "[[model.files]]\npath = " << quoted(rel) << "\nsha256 = " << quoted(sha256_file(f)) << "\n";
  }
  return out.str();
}

}  // namespace infer::manifest

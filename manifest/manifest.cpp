#include "manifest/manifest.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <toml++/toml.h>

#include "infer/errors.h"
#include "platform/input_file.h"

namespace infer::manifest {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMaxManifestBytes = 4u << 20;

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

// Which keys a table may hold: any (schema 1), the machine's (schema 2's top level) or a backend's.
enum class Scope { Any, Machine, Backend };

void sort_by_schema(std::vector<Expectation>& items) {
  std::stable_sort(items.begin(), items.end(), [](const Expectation& a, const Expectation& b) {
    auto index = [](const std::string& key) {
      const auto& keys = schema_keys();
      return std::find_if(keys.begin(), keys.end(), [&](const SchemaKey& s) { return key == s.key; }) - keys.begin();
    };
    return index(a.key) < index(b.key);
  });
}

class Reader {
 public:
  explicit Reader(const fs::path& path) : file_(path.u8string()) {}

  [[noreturn]] void fail(const toml::node& at, const std::string& key, const std::string& problem) const {
    throw InputError(file_, "line " + std::to_string(at.source().begin.line) + ": key '" + key + "': " + problem);
  }

  Severity severity(const toml::node& n, const std::string& key) const {
    const std::optional<std::string> s = n.value<std::string>();
    if (!n.is_string())
      fail(n, key, std::string("severity must be \"required\" or \"advisory\", found ") + type_name(n));
    if (*s == "required") return Severity::Required;
    if (*s == "advisory") return Severity::Advisory;
    fail(n, key, "severity must be \"required\" or \"advisory\", found \"" + *s + "\"");
  }

  // The `want` part: a string, an integer (Version kind) or an array of strings (Pattern kind).
  void want(const toml::node& n, const std::string& key, Expectation& e) const {
    if (e.kind == ItemKind::Version) {
      std::string text;
      if (n.is_string()) {
        text = *n.value<std::string>();
      } else if (n.is_integer()) {
        text = std::to_string(*n.value<std::int64_t>());
      } else {
        fail(n, key,
             std::string("expected a version constraint string such as \">=9.19, <10\", found ") + type_name(n));
      }
      try {
        e.constraint = Constraint::parse(text);
      } catch (const std::invalid_argument& err) {
        fail(n, key, std::string("bad constraint: ") + err.what());
      }
      e.want = e.constraint->text();
      return;
    }
    if (n.is_string()) {
      e.patterns.push_back(*n.value<std::string>());
    } else if (const toml::array* a = n.as_array()) {
      for (const toml::node& p : *a) {
        if (!p.is_string()) fail(p, key, std::string("patterns must be strings, found ") + type_name(p));
        e.patterns.push_back(*p.value<std::string>());
      }
      if (e.patterns.empty()) fail(n, key, "empty list of name patterns");
    } else {
      fail(n, key, std::string("expected a name pattern or a list of them, found ") + type_name(n));
    }
    for (std::size_t i = 0; i < e.patterns.size(); ++i) e.want += (i ? " | " : "") + e.patterns[i];
  }

  Expectation item(const toml::node& n, const SchemaKey& schema) const {
    Expectation e;
    e.key = schema.key;
    e.kind = schema.kind;
    e.line = static_cast<int>(n.source().begin.line);
    if (const toml::table* t = n.as_table()) {
      bool has_want = false;
      for (const auto& [k, v] : *t) {
        const std::string sub = e.key + "." + std::string(k.str());
        if (k == "severity") {
          e.severity = severity(v, sub);
        } else if (k == "want" && schema.kind != ItemKind::Rule) {
          want(v, sub, e);
          has_want = true;
        } else {
          fail(v, sub,
               schema.kind == ItemKind::Rule ? "unknown key (a rule takes only severity)"
                                             : "unknown key (expected want, severity)");
        }
      }
      if (schema.kind != ItemKind::Rule && !has_want) fail(n, e.key, "missing 'want'");
      if (schema.kind == ItemKind::Rule) e.want = "holds";
      return e;
    }
    if (schema.kind == ItemKind::Rule) {
      e.severity = severity(n, e.key);
      e.want = "holds";
      return e;
    }
    want(n, e.key, e);
    return e;
  }

  ModelFile model_file(const toml::node& n, const fs::path& dir) const {
    const toml::table* t = n.as_table();
    if (!t) fail(n, "model.files", std::string("each entry must be a table { path, sha256 }, found ") + type_name(n));
    ModelFile f;
    f.line = static_cast<int>(n.source().begin.line);
    bool has_path = false, has_sha = false;
    for (const auto& [k, v] : *t) {
      const std::string key = "model.files." + std::string(k.str());
      if (k == "path") {
        if (!v.is_string()) fail(v, key, std::string("expected a string, found ") + type_name(v));
        f.path = *v.value<std::string>();
        has_path = true;
      } else if (k == "sha256") {
        if (!v.is_string()) fail(v, key, std::string("expected a string, found ") + type_name(v));
        f.sha256 = *v.value<std::string>();
        const bool hex = std::all_of(f.sha256.begin(), f.sha256.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
        });
        if (f.sha256.size() != 64 || !hex)
          fail(v, key, "expected 64 lowercase hexadecimal digits, found \"" + f.sha256 + "\"");
        has_sha = true;
      } else if (k == "severity") {
        f.severity = severity(v, key);
      } else {
        fail(v, key, "unknown key (expected path, sha256, severity)");
      }
    }
    if (!has_path) fail(n, "model.files.path", "missing");
    if (!has_sha) fail(n, "model.files.sha256", "missing");
    f.resolved = fs::u8path(f.path).is_absolute() ? fs::u8path(f.path) : dir / fs::u8path(f.path);
    return f;
  }

  // The items of one table [section] (schema 1, or schema 2's machine part), or of a backend's
  // table (prefix "backend.cu13." in messages).
  void section(const std::string& section, const toml::node& v, Scope scope, std::vector<Expectation>& items,
               const std::string& prefix = "") const {
    const toml::table* t = v.as_table();
    const auto in_scope = [scope](const std::string& key) {
      return scope == Scope::Any || (scope == Scope::Backend) == is_backend_key(key);
    };
    const bool known_section = std::any_of(schema_keys().begin(), schema_keys().end(), [&](const SchemaKey& s) {
      return std::string(s.key).rfind(section + ".", 0) == 0 && in_scope(s.key);
    });
    if (!known_section) {
      fail(v, prefix + section,
           scope == Scope::Backend ? "unknown section in a [[backend]] (expected name, driver, gpu, cuda, cudnn)"
           : scope == Scope::Machine
               ? "unknown section (expected schema, system, gpu, backend, model; driver, cuda and cudnn go in "
                 "[[backend]])"
               : "unknown section (expected schema, system, driver, gpu, cuda, cudnn, model)");
    }
    if (!t) fail(v, prefix + section, std::string("expected a table [") + section + "], found " + type_name(v));
    for (const auto& [ik, iv] : *t) {
      const std::string key = section + "." + std::string(ik.str());
      auto s = std::find_if(schema_keys().begin(), schema_keys().end(),
                            [&](const SchemaKey& sk) { return key == sk.key && in_scope(key); });
      if (s == schema_keys().end()) {
        std::string known;
        for (const SchemaKey& sk : schema_keys()) {
          if (std::string(sk.key).rfind(section + ".", 0) == 0 && in_scope(sk.key))
            known += (known.empty() ? "" : ", ") + std::string(sk.key).substr(section.size() + 1);
        }
        fail(iv, prefix + key,
             "unknown key (expected one of: " + known + ")" +
                 (scope == Scope::Machine && is_backend_key(key) ? "; in schema 2 it goes in a [[backend]]" : ""));
      }
      items.push_back(item(iv, *s));
    }
  }

  BackendSection backend(const toml::node& n) const {
    const toml::table* t = n.as_table();
    if (!t) fail(n, "backend", std::string("expected a [[backend]] table, found ") + type_name(n));
    BackendSection b;
    b.line = static_cast<int>(n.source().begin.line);
    const toml::node* name = t->get("name");
    if (!name || !name->is_string())
      fail(n, "backend.name", "missing: each [[backend]] has name = \"cu13\" or \"cu12\"");
    b.name = *name->value<std::string>();
    const std::string digits = b.name.size() > 2 && b.name.rfind("cu", 0) == 0 ? b.name.substr(2) : "";
    const auto is_digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    // The major as CUDA writes it: digits without a leading zero ("cu012" would be a second name of cu12).
    if (digits.empty() || digits.size() > 3 || digits[0] == '0' ||
        !std::all_of(digits.begin(), digits.end(), is_digit)) {
      fail(*name, "backend.name", "expected \"cu\" and a CUDA major (\"cu13\", \"cu12\"), found \"" + b.name + "\"");
    }
    b.cuda_major = std::stoi(digits);
    for (const auto& [k, v] : *t) {
      if (k == "name") continue;
      section(std::string(k.str()), v, Scope::Backend, b.items, "backend." + b.name + ".");
    }
    sort_by_schema(b.items);
    return b;
  }

 private:
  std::string file_;
};

}  // namespace

const char* to_string(Severity s) { return s == Severity::Required ? "required" : "advisory"; }

const std::vector<SchemaKey>& schema_keys() {
  static const std::vector<SchemaKey> keys = {
      {"system.os", ItemKind::Pattern, "operating system (PRETTY_NAME in /etc/os-release)"},
      {"system.arch", ItemKind::Pattern, "machine architecture (uname)"},
      {"system.glibc", ItemKind::Version, "C library version (gnu_get_libc_version)"},
      {"system.compiler", ItemKind::Pattern, "compiler that built infer"},
      {"driver.release", ItemKind::Version, "NVIDIA driver release (NVML, else /proc/driver/nvidia/version)"},
      {"driver.cuda", ItemKind::Version, "highest CUDA version the driver supports (cuDriverGetVersion)"},
      {"driver.runtime_compatible", ItemKind::Rule,
       "the driver is new enough for the CUDA runtime loaded (facts.toml)"},
      {"gpu.count", ItemKind::Version, "GPUs visible to CUDA (cuDeviceGetCount; honours CUDA_VISIBLE_DEVICES)"},
      {"gpu.compute_capability", ItemKind::Version, "compute capability of every GPU (NVML)"},
      {"gpu.name", ItemKind::Pattern, "GPU name patterns; every GPU must match one (NVML)"},
      {"gpu.memory_mib", ItemKind::Version, "memory of the smallest GPU in MiB (NVML)"},
      {"cuda.built", ItemKind::Version, "CUDA toolkit the GPU backend was compiled with"},
      {"cuda.runtime", ItemKind::Version, "CUDA runtime loaded (libcudart)"},
      {"cuda.single_copy", ItemKind::Rule, "no other libcudart of the same name on the search path"},
      {"cudnn.built", ItemKind::Version, "cuDNN the GPU backend was compiled with"},
      {"cudnn.version", ItemKind::Version, "cuDNN loaded (cudnnGetVersion)"},
      {"cudnn.runtime_compatible", ItemKind::Rule, "loaded cuDNN: same major as compiled, minor >= compiled"},
      {"cudnn.cuda_major", ItemKind::Version, "CUDA major the loaded cuDNN was built for (cudnnGetCudartVersion)"},
      {"cudnn.sublibraries", ItemKind::Rule, "every cuDNN sub-library present, next to libcudnn and of the same build"},
      {"cudnn.single_copy", ItemKind::Rule, "no other libcudnn of the same name on the search path"},
  };
  return keys;
}

bool is_backend_key(const std::string& key) {
  return key.rfind("driver.", 0) == 0 || key.rfind("cuda.", 0) == 0 || key.rfind("cudnn.", 0) == 0 ||
         key == "gpu.compute_capability";
}

const Expectation* BackendSection::find(const std::string& key) const {
  for (const Expectation& e : items) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

Manifest Manifest::as_schema2() const {
  if (schema == 2) return *this;
  Manifest m;
  m.path = path;
  m.schema = 2;
  m.model_files = model_files;
  BackendSection b;
  b.cuda_major = 13;
  for (const char* key : {"cuda.runtime", "cuda.built"}) {
    const Expectation* e = find(key);
    if (!e || !e->constraint) continue;
    for (int major : {13, 12, 11}) {
      if (e->constraint->allows(Version({static_cast<std::uint64_t>(major), 0, 0})) ||
          e->constraint->allows(Version({static_cast<std::uint64_t>(major), 9, 0}))) {
        b.cuda_major = major;
        break;
      }
    }
    break;
  }
  b.name = "cu" + std::to_string(b.cuda_major);
  for (const Expectation& e : items) (is_backend_key(e.key) ? b.items : m.items).push_back(e);
  m.backends.push_back(std::move(b));
  return m;
}

const Expectation* Manifest::find(const std::string& key) const {
  for (const Expectation& e : items) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

const ModelFile* Manifest::model_file(const fs::path& file) const {
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(file, ec);
  for (const ModelFile& f : model_files) {
    std::error_code ec2;
    if (fs::weakly_canonical(f.resolved, ec2) == target && !ec && !ec2) return &f;
  }
  return nullptr;
}

Manifest read_manifest(const fs::path& path) {
  const std::string file = path.u8string();
  // A manifest is a few KB; the limit only stops a wrong file (a disk image, /dev/zero) being read.
  const std::string text = read_text_file(path, kMaxManifestBytes, "a manifest");
  toml::table root;
  try {
    root = toml::parse(text, file);
  } catch (const toml::parse_error& e) {
    throw InputError(
        file, "line " + std::to_string(e.source().begin.line) + ": invalid TOML: " + std::string(e.description()));
  }
  const Reader r(path);
  Manifest m;
  m.path = path;
  const fs::path dir = fs::absolute(path).parent_path();
  // The schema decides which sections are allowed; a file without one is read as schema 1 so that
  // its other errors are named first, and then refused.
  const toml::node* schema = root.get("schema");
  if (schema) {
    const std::optional<std::int64_t> version = schema->value<std::int64_t>();
    if (version != std::int64_t{1} && version != std::int64_t{2}) {
      r.fail(*schema, "schema", "this infer reads schema 1 and 2");
    }
    m.schema = static_cast<int>(*version);
  }
  for (const auto& [k, v] : root) {
    const std::string section(k.str());
    if (section == "schema") continue;
    if (section == "model") {
      const toml::table* t = v.as_table();
      if (!t) r.fail(v, "model", std::string("expected a table, found ") + type_name(v));
      for (const auto& [mk, mv] : *t) {
        if (mk != "files") r.fail(mv, "model." + std::string(mk.str()), "unknown key (expected [[model.files]])");
        const toml::array* a = mv.as_array();
        if (!a) r.fail(mv, "model.files", std::string("expected [[model.files]] entries, found ") + type_name(mv));
        for (const toml::node& n : *a) m.model_files.push_back(r.model_file(n, dir));
      }
      continue;
    }
    if (section == "backend" && m.schema == 2) {
      const toml::array* a = v.as_array();
      if (!a) r.fail(v, "backend", std::string("expected [[backend]] tables, found ") + type_name(v));
      for (const toml::node& n : *a) m.backends.push_back(r.backend(n));
      continue;
    }
    const Scope scope = m.schema == 1 ? Scope::Any : Scope::Machine;
    r.section(section, v, scope, m.items);
  }
  // Without it an empty or truncated file would pass --check while checking nothing.
  if (!schema) {
    throw InputError(file, std::string("key 'schema': missing") + (root.empty() ? " (the file has no keys)" : "") +
                               ": every manifest says schema = 1 or 2");
  }
  if (m.schema == 2 && m.backends.empty()) {
    r.fail(*schema, "backend", "schema 2 lists at least one [[backend]] (name = \"cu13\", ...)");
  }
  sort_by_schema(m.items);
  return m;
}

int wanted_cudnn_major(const Manifest& m) {
  const Expectation* e = m.find("cudnn.version");
  for (const BackendSection& b : m.backends) {
    if (!e) e = b.find("cudnn.version");
  }
  if (!e || !e->constraint) return 0;
  for (const std::uint64_t major : {9u, 8u}) {
    for (std::uint64_t minor = 0; minor < 100; ++minor) {
      if (e->constraint->allows(Version({major, minor, 0})) || e->constraint->allows(Version({major, minor, 99})))
        return static_cast<int>(major);
    }
  }
  return 0;
}

}  // namespace infer::manifest

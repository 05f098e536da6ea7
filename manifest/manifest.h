// VERSIONS.toml: what a deployment needs, as constraints with a severity. The schema is documented
// in docs/manifest.md and in the comments of the shipped VERSIONS.toml.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "manifest/constraint.h"

namespace infer::manifest {

enum class Severity { Required, Advisory };
const char* to_string(Severity s);

// How an item's `want` is written and compared.
enum class ItemKind {
  Version,  // a Constraint on a dotted number ("13.0", ">=580.65.06", "9.19.*", ">=9.1, <10", "*")
  Pattern,  // one glob or a list of globs on a name ("NVIDIA H100*"); any may match
  Rule,  // a fixed check of the checker (for example "all cuDNN sub-libraries are of the same build"); only a severity
};

// One key of the schema, in report order.
struct SchemaKey {
  const char* key;  // "driver.release": section "driver", key "release"
  ItemKind kind;
  const char* meaning;  // one line, for docs/manifest.md and --write-manifest comments
};
const std::vector<SchemaKey>& schema_keys();

struct Expectation {
  std::string key;  // "cudnn.version"
  ItemKind kind = ItemKind::Version;
  std::string want;  // as written, normalised ("required"/"advisory" text is not a want): shown in the report
  std::optional<Constraint> constraint;  // ItemKind::Version
  std::vector<std::string> patterns;     // ItemKind::Pattern
  Severity severity = Severity::Required;
  int line = 0;
};

struct ModelFile {
  // As written: relative to the manifest's folder, or absolute. It may lead outside that folder
  // (docs/manifest.md, "[[model.files]]"); symlinks are followed, and the file must be a regular file.
  std::string path;
  std::filesystem::path resolved;  // absolute
  std::string sha256;              // 64 lowercase hex digits
  Severity severity = Severity::Required;
  int line = 0;
};

// Schema 2: what one GPU backend needs ([[backend]]: name = "cu13", and its own driver, gpu, cuda
// and cudnn tables). The check passes when the common items hold and one backend's items hold.
struct BackendSection {
  std::string name;                // "cu13", "cu12"
  int cuda_major = 0;              // 13, 12
  std::vector<Expectation> items;  // in schema order, keys as in schema 1 ("driver.release")
  int line = 0;
  const Expectation* find(const std::string& key) const;
};

// Whether a schema key belongs to a backend in schema 2 (driver.*, gpu.compute_capability,
// cuda.*, cudnn.*) rather than to the machine as a whole (system.*, gpu.count, gpu.name,
// gpu.memory_mib).
bool is_backend_key(const std::string& key);

struct Manifest {
  std::filesystem::path path;
  int schema = 1;
  std::vector<Expectation> items;        // in schema order; schema 2: the common items only
  std::vector<BackendSection> backends;  // schema 2, in the file's order (the order of preference)
  std::vector<ModelFile> model_files;
  const Expectation* find(const std::string& key) const;
  // Schema 1 as a schema 2 manifest would say it: one backend, of the CUDA major its cuda.runtime
  // or cuda.built names (else 13), holding the backend items; schema 2 as it is.
  Manifest as_schema2() const;
  // The entry for this model file (compared by canonical path), or nullptr.
  const ModelFile* model_file(const std::filesystem::path& file) const;
};

// Reads and validates a manifest. Throws InputError "<file>: line N: key 'x': problem" for bad
// TOML, unknown keys, wrong types and bad constraints, "<file>: key 'schema': missing: ..." for a
// file without `schema = 1` (an empty one included), and "<file>: no such file" when missing (see
// InputFile for the other reasons a file is refused: not a regular file, over 4 MiB, ...).
Manifest read_manifest(const std::filesystem::path& path);

// The cuDNN major the manifest's cudnn.version allows (the newest of 9, 8), for a build without
// the GPU backend, which has no compiled-in one; 0 when the manifest has no cudnn.version or it
// allows neither.
int wanted_cudnn_major(const Manifest& m);

}  // namespace infer::manifest

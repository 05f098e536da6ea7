// VERSIONS.toml: the manifest reader (sections, items, severities, model files, schema 2's
// [[backend]] tables) and the constraint
// parser it uses. The whole input is read as a manifest; it is also parsed as one constraint and one
// version, and a constraint that parses is evaluated on a few versions.
// Invariants: the manifest fails only with InputError, the parsers only with std::invalid_argument.
#include <string>

#include "tests/fuzz/fuzz_util.h"
#include "manifest/constraint.h"
#include "manifest/manifest.h"
#include "infer/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path path = infer::fuzz::write_input("VERSIONS.toml", data, size);
  try {
    const infer::manifest::Manifest m = infer::manifest::read_manifest(path);
    for (const infer::manifest::Expectation& e : m.items) {
      FUZZ_CHECK(e.kind != infer::manifest::ItemKind::Version || e.constraint.has_value());
    }
    // Schema 2: every backend is named cuN and holds only backend keys; schema 1 read as schema 2
    // keeps every item.
    for (const infer::manifest::BackendSection& b : m.backends) {
      FUZZ_CHECK(b.name == "cu" + std::to_string(b.cuda_major));
      for (const infer::manifest::Expectation& e : b.items) {
        FUZZ_CHECK(infer::manifest::is_backend_key(e.key));
        FUZZ_CHECK(e.kind != infer::manifest::ItemKind::Version || e.constraint.has_value());
      }
    }
    const infer::manifest::Manifest two = m.as_schema2();
    std::size_t items = two.items.size();
    for (const infer::manifest::BackendSection& b : two.backends) items += b.items.size();
    FUZZ_CHECK(m.schema == 2 || (two.backends.size() == 1 && items == m.items.size()));
    m.model_file(infer::fuzz::scratch_dir() / "weights" / "fashion.safetensors");
  } catch (const infer::InputError&) {
  }

  const std::string text(reinterpret_cast<const char*>(data), size);
  if (const auto v = infer::manifest::Version::try_parse(text)) {
    FUZZ_CHECK(infer::manifest::Version::parse(v->to_string()) == *v);
  }
  try {
    const infer::manifest::Constraint c = infer::manifest::Constraint::parse(text);
    for (const char* v : {"0", "9.19.0", "13.0", "580.65.06", "1000000000000.1"}) {
      c.allows(infer::manifest::Version::parse(v));
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}

// The cuDNN autotune cache reader (backends/cudnn/autotune/autotune_cache.h) on arbitrary bytes: JSON syntax,
// member types and ranges, duplicate keys, the checksum. Random bytes almost never carry a right
// checksum, so each input that is a JSON object is also parsed once more with its checksum
// recomputed (the formula the header documents): the entry checks and the round trip see mutated
// entries too, not only the seeds.
// Invariants: parse() never throws; a rejected input is an empty cache with one line
// "<source>: <problem>"; an accepted one serializes to a file that parses again, without a problem,
// to the same entries and the same bytes; a put() on it survives the round trip too.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_util.h"
#include "backends/cudnn/autotune/autotune_cache.h"

namespace {

using infer::cudnn::AutotuneCache;

void check(std::string_view text) {
  AutotuneCache cache = AutotuneCache::parse(text, "fuzz.json");
  FUZZ_CHECK(!cache.dirty());
  if (!cache.problem().empty()) {
    FUZZ_CHECK(cache.size() == 0);
    FUZZ_CHECK(cache.problem().rfind("fuzz.json: ", 0) == 0);
    FUZZ_CHECK(cache.problem().find('\n') == std::string::npos);
    return;
  }
  const std::string once = cache.serialize();
  const AutotuneCache again = AutotuneCache::parse(once, "again.json");
  FUZZ_CHECK(again.problem().empty());
  FUZZ_CHECK(again.size() == cache.size());
  FUZZ_CHECK(again.serialize() == once);

  const infer::cudnn::AutotuneKey key{"fuzz GPU (sm_00)", 91900, "fp16", "x=1x1x1x1"};
  const infer::cudnn::AutotuneChoice choice{3, true, 4096, 0.5};
  const bool had = cache.find(key).has_value();
  cache.put(key, choice);
  FUZZ_CHECK(cache.size() == again.size() + (had ? 0 : 1));
  const AutotuneCache grown = AutotuneCache::parse(cache.serialize(), "grown.json");
  FUZZ_CHECK(grown.problem().empty());
  FUZZ_CHECK(grown.size() == cache.size());
  const auto found = grown.find(key);
  FUZZ_CHECK(found && found->algorithm == 3 && found->fused && found->workspace_bytes == 4096 && found->time_ms == 0.5);
}

// The input with "checksum" set to FNV-1a 64 of its compact "entries"; empty when the input is not
// a JSON object with entries.
std::string restamped(std::string_view text) {
  try {
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(text.begin(), text.end());
    if (!doc.is_object() || !doc.contains("entries")) return "";
    std::uint64_t h = 14695981039346656037ull;
    for (const char c : doc["entries"].dump()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    doc["checksum"] = hex;
    return doc.dump(2) + "\n";
  } catch (const nlohmann::ordered_json::exception&) {
    return "";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check(text);
  if (const std::string fixed = restamped(text); !fixed.empty()) check(fixed);
  return 0;
}

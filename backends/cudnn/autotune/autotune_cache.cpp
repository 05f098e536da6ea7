#include "backends/cudnn/autotune/autotune_cache.h"
#include "backends/cudnn/autotune/autotune_cache_file.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace infer::cudnn {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;                 // reading: members looked up by name
using OrderedJson = nlohmann::ordered_json;  // writing: members in the documented order

constexpr const char* kFormat = "infer-autotune-cache";
constexpr int kVersion = 1;
constexpr const char* kTopMembers[] = {"format", "version", "entries", "checksum"};
constexpr const char* kEntryMembers[] = {"device",    "cudnn_version", "precision",       "shape",
                                         "algorithm", "fused",         "workspace_bytes", "time_ms"};

// Bad content found by parse(); never leaves this file (parse turns it into problem()).
class Invalid : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The problem goes into a one-line warning: control characters (from a path or from the JSON
// library's message) become spaces.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return s;
}

// A found value for a message: scalars as JSON, at most ~40 bytes, cut on a UTF-8 boundary.
std::string describe(const Json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 40) {
    std::size_t n = 37;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    s = s.substr(0, n) + "...";
  }
  return j.is_string() ? "the string " + s : s;
}

bool contains(const char* const* first, const char* const* last, const std::string& name) {
  for (; first != last; ++first) {
    if (name == *first) return true;
  }
  return false;
}

// Non-empty valid UTF-8 (the JSON writer throws on anything else).
std::string string_problem(const std::string& s) {
  if (s.empty()) return "is empty, expected a non-empty string";
  try {
    (void)Json(s).dump();
  } catch (const Json::type_error&) {
    return "is not valid UTF-8";
  }
  return "";
}

// The rules of the file format on a key and a choice; empty when it can be stored.
std::string key_problem(const AutotuneKey& key) {
  if (std::string p = string_problem(key.device); !p.empty()) return "\"device\" " + p;
  if (std::string p = string_problem(key.shape); !p.empty()) return "\"shape\" " + p;
  if (key.cudnn_version <= 0) {
    return "\"cudnn_version\" is " + std::to_string(key.cudnn_version) + ", expected a positive cudnnGetVersion()";
  }
  if (key.precision != "fp32" && key.precision != "tf32" && key.precision != "fp16") {
    return "\"precision\" is " + describe(Json(key.precision)) + ", expected \"fp32\", \"tf32\" or \"fp16\"";
  }
  return "";
}

std::string choice_problem(const AutotuneChoice& choice) {
  if (choice.algorithm < 0 || choice.algorithm >= kConvolutionAlgorithmCount) {
    return "\"algorithm\" is " + std::to_string(choice.algorithm) + ", expected an integer in [0, " +
           std::to_string(kConvolutionAlgorithmCount - 1) + "]";
  }
  if (!std::isfinite(choice.time_ms) || choice.time_ms < 0) {
    return "\"time_ms\" is " + describe(Json(choice.time_ms)) + ", expected a finite number >= 0";
  }
  return "";
}

const Json& member(const Json& object, const char* name, const std::string& where) {
  const auto it = object.find(name);
  if (it == object.end()) throw Invalid(where + "\"" + name + "\" is missing");
  return *it;
}

std::string read_string(const Json& object, const char* name, const std::string& where) {
  const Json& j = member(object, name, where);
  if (!j.is_string()) throw Invalid(where + "\"" + name + "\" is " + describe(j) + ", expected a string");
  return j.get<std::string>();
}

// An integer in [0, max]; the message names the field, what was found and the range.
std::uint64_t read_unsigned(const Json& object, const char* name, std::uint64_t max, const std::string& where) {
  const Json& j = member(object, name, where);
  const std::string expected = ", expected an integer in [0, " + std::to_string(max) + "]";
  if (!j.is_number_integer()) throw Invalid(where + "\"" + name + "\" is " + describe(j) + expected);
  // Non-negative integers parse as unsigned; "-0" parses as a signed zero.
  if (!j.is_number_unsigned() && j.get<std::int64_t>() < 0) {
    throw Invalid(where + "\"" + name + "\" is " + describe(j) + expected);
  }
  const std::uint64_t value =
      j.is_number_unsigned() ? j.get<std::uint64_t>() : static_cast<std::uint64_t>(j.get<std::int64_t>());
  if (value > max) throw Invalid(where + "\"" + name + "\" is " + describe(j) + expected);
  return value;
}

void reject_unknown_members(const Json& object, const char* const* first, const char* const* last,
                            const std::string& where) {
  for (const auto& item : object.items()) {
    if (!contains(first, last, item.key())) {
      throw Invalid(where + "unknown member " + describe(Json(item.key())) + " (not in version " +
                    std::to_string(kVersion) + " of the format)");
    }
  }
}

std::pair<AutotuneKey, AutotuneChoice> read_entry(const Json& e, const std::string& where) {
  if (!e.is_object()) throw Invalid(where + "is " + describe(e) + ", expected an object");
  reject_unknown_members(e, std::begin(kEntryMembers), std::end(kEntryMembers), where);
  AutotuneKey key;
  key.device = read_string(e, "device", where);
  key.cudnn_version = static_cast<int>(read_unsigned(e, "cudnn_version", INT_MAX, where));
  key.precision = read_string(e, "precision", where);
  key.shape = read_string(e, "shape", where);
  AutotuneChoice choice;
  choice.algorithm = static_cast<int>(read_unsigned(e, "algorithm", kConvolutionAlgorithmCount - 1, where));
  const Json& fused = member(e, "fused", where);
  if (!fused.is_boolean()) throw Invalid(where + "\"fused\" is " + describe(fused) + ", expected true or false");
  choice.fused = fused.get<bool>();
  choice.workspace_bytes = static_cast<std::size_t>(read_unsigned(e, "workspace_bytes", SIZE_MAX, where));
  const Json& time = member(e, "time_ms", where);
  if (!time.is_number()) throw Invalid(where + "\"time_ms\" is " + describe(time) + ", expected a number");
  choice.time_ms = time.get<double>();
  if (std::string p = key_problem(key); !p.empty()) throw Invalid(where + p);
  if (std::string p = choice_problem(choice); !p.empty()) throw Invalid(where + p);
  return {std::move(key), choice};
}

// FNV-1a 64: cheap and dependency-free; detects accidents, not attacks (see the header).
std::string checksum_of(const std::string& canonical) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : canonical) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

bool is_checksum_text(const std::string& s) {
  if (s.size() != 16) return false;
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The "entries" array of a map sorted by key. parse() recomputes the checksum from what it read,
// through this same function, so a file that differs only in whitespace, entry order or number
// spelling ("1.50" for "1.5") is the same cache; a changed value changes the checksum.
template <typename SortedEntries>
OrderedJson entries_json(const SortedEntries& sorted) {
  OrderedJson entries = OrderedJson::array();
  for (const auto& [key, choice] : sorted) {
    OrderedJson e = OrderedJson::object();
    e["device"] = key.device;
    e["cudnn_version"] = key.cudnn_version;
    e["precision"] = key.precision;
    e["shape"] = key.shape;
    e["algorithm"] = choice.algorithm;
    e["fused"] = choice.fused;
    e["workspace_bytes"] = choice.workspace_bytes;
    e["time_ms"] = choice.time_ms;
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace

bool AutotuneKey::operator==(const AutotuneKey& other) const {
  return device == other.device && cudnn_version == other.cudnn_version && precision == other.precision &&
         shape == other.shape;
}

bool AutotuneCache::KeyLess::operator()(const AutotuneKey& a, const AutotuneKey& b) const {
  return std::tie(a.device, a.cudnn_version, a.precision, a.shape) <
         std::tie(b.device, b.cudnn_version, b.precision, b.shape);
}

std::string AutotuneCache::serialize() const {
  const OrderedJson entries = entries_json(entries_);
  OrderedJson doc = OrderedJson::object();
  doc["format"] = kFormat;
  doc["version"] = kVersion;
  doc["entries"] = entries;
  doc["checksum"] = checksum_of(entries.dump());
  return doc.dump(2) + "\n";
}

AutotuneCache AutotuneCache::parse(std::string_view text, const std::string& source) {
  AutotuneCache cache;
  try {
    if (text.size() > kAutotuneCacheMaxBytes) {
      throw Invalid("too large: " + std::to_string(text.size()) + " bytes, the limit is 16 MiB");
    }
    if (text.empty()) throw Invalid("empty file, expected a JSON autotune cache");
    Json doc;
    try {
      doc = Json::parse(text.begin(), text.end());
    } catch (const Json::parse_error& e) {
      // The library's message starts "[json.exception.parse_error.101] parse error at ...".
      std::string why = e.what();
      if (const std::size_t p = why.find("] "); p != std::string::npos) why = why.substr(p + 2);
      throw Invalid((e.byte >= text.size() ? "truncated: " : "not JSON: ") + why);
    } catch (const Json::exception& e) {
      throw Invalid(std::string("not JSON: ") + e.what());
    }
    if (text.back() != '\n') throw Invalid("truncated: the file does not end with a newline");
    if (!doc.is_object()) throw Invalid("is " + describe(doc) + ", expected a JSON object");

    const Json& format = member(doc, "format", "");
    if (format != kFormat) {
      throw Invalid("\"format\" is " + describe(format) + ", expected \"" + kFormat + "\": not an autotune cache");
    }
    const Json& version = member(doc, "version", "");
    if (!version.is_number_integer() || version != kVersion) {
      throw Invalid("\"version\" is " + describe(version) + ", this build reads version " + std::to_string(kVersion));
    }
    reject_unknown_members(doc, std::begin(kTopMembers), std::end(kTopMembers), "");

    const Json& entries = member(doc, "entries", "");
    if (!entries.is_array()) throw Invalid("\"entries\" is " + describe(entries) + ", expected an array");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string where = "entries[" + std::to_string(i) + "]: ";
      auto [key, choice] = read_entry(entries[i], where);
      if (!cache.entries_.emplace(std::move(key), choice).second) {
        throw Invalid(where + "the same device, cudnn_version, precision and shape as an earlier entry");
      }
    }

    const Json& checksum = member(doc, "checksum", "");
    if (!checksum.is_string() || !is_checksum_text(checksum.get<std::string>())) {
      throw Invalid("\"checksum\" is " + describe(checksum) + ", expected 16 lowercase hex digits");
    }
    const std::string expected = checksum_of(entries_json(cache.entries_).dump());
    if (checksum.get<std::string>() != expected) {
      throw Invalid("checksum mismatch: the file says " + checksum.get<std::string>() + ", its entries give " +
                    expected + " (the file was edited or corrupted)");
    }
  } catch (const Invalid& e) {
    cache = AutotuneCache();
    cache.problem_ = one_line(source + ": " + e.what());
  } catch (const Json::exception& e) {  // a type the checks above missed: still bad content, never a throw
    cache = AutotuneCache();
    cache.problem_ = one_line(source + ": invalid autotune cache: " + e.what());
  }
  return cache;
}

AutotuneCache AutotuneCache::load(const fs::path& path) {
  if (path.empty()) return {};
  const std::string source = path.u8string();
  try {
    const std::optional<std::string> text = detail::read_cache_file(path);
    return text ? parse(*text, source) : AutotuneCache();
  } catch (const std::runtime_error& e) {
    AutotuneCache cache;
    cache.problem_ = one_line(source + ": " + e.what());
    return cache;
  }
}

std::optional<AutotuneChoice> AutotuneCache::find(const AutotuneKey& key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void AutotuneCache::put(const AutotuneKey& key, const AutotuneChoice& choice) {
  if (std::string p = key_problem(key); !p.empty()) throw std::invalid_argument("autotune key: " + p);
  if (std::string p = choice_problem(choice); !p.empty()) throw std::invalid_argument("autotune choice: " + p);
  const auto [it, added] = entries_.try_emplace(key, choice);
  if (added) {
    dirty_ = true;
    return;
  }
  AutotuneChoice& old = it->second;
  if (old.algorithm != choice.algorithm || old.fused != choice.fused || old.workspace_bytes != choice.workspace_bytes ||
      old.time_ms != choice.time_ms) {
    old = choice;
    dirty_ = true;
  }
}

void AutotuneCache::save(const fs::path& path) {
  const std::string name = path.u8string();
  if (path.empty()) throw AutotuneCacheError(name, std::string("no cache location: ") + detail::kCacheLocationHint);
  if (!path.has_filename()) throw AutotuneCacheError(name, "names a folder, expected a file path");
  std::error_code ec;
  const fs::path dir = fs::absolute(path, ec).parent_path();
  if (ec) throw AutotuneCacheError(name, "cannot resolve the path: " + ec.message());
  fs::create_directories(dir, ec);
  if (ec) throw AutotuneCacheError(name, "cannot create the folder " + dir.u8string() + ": " + ec.message());
  try {
    detail::replace_cache_file(path, serialize());
  } catch (const std::runtime_error& e) {
    throw AutotuneCacheError(name, e.what());
  }
  dirty_ = false;
}

}  // namespace infer::cudnn

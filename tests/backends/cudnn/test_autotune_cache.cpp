// The cuDNN autotune cache file (backends/cudnn/autotune/autotune_cache.h), without a GPU: round trips of
// fresh random entries, the checksum formula the header documents, every kind of corrupt file
// (each one an empty cache with a one-line problem naming the file), the atomic save, and the
// default location's environment variables.
#include "backends/cudnn/autotune/autotune_cache.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/test_util.h"

namespace infer::test {
namespace {

namespace fs = std::filesystem;
using cudnn::AutotuneCache;
using cudnn::AutotuneCacheError;
using cudnn::AutotuneChoice;
using cudnn::AutotuneKey;
using OrderedJson = nlohmann::ordered_json;

// Fresh random keys and choices; the seed is in every failure message (SCOPED_TRACE(trace())).
class RandomEntries {
 public:
  RandomEntries() : seed_(std::random_device{}()), gen_(seed_) {}
  std::string trace() const { return "random seed " + std::to_string(seed_); }
  std::uint64_t below(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(gen_); }

  // Strings a JSON writer must escape or encode: quotes, backslashes, control characters, UTF-8.
  std::string text(bool plain = false) {
    static const std::vector<std::string> fancy = {"a",
                                                   "Z",
                                                   "9",
                                                   " ",
                                                   "(",
                                                   "_",
                                                   "\"",
                                                   "\\",
                                                   "\n",
                                                   "\t",
                                                   "\x01",
                                                   "\x7f",
                                                   "\xc3\xa9",
                                                   "\xe2\x80\x94",
                                                   "\xf0\x9f\x9a\x80"};
    static const std::vector<std::string> letters = {"a", "b", "x", "y", "M", "N", "3", "7", "_", " ", "-", "("};
    const std::vector<std::string>& alphabet = plain ? letters : fancy;
    std::string s;
    for (std::uint64_t n = 1 + below(24); n > 0; --n) s += alphabet[below(alphabet.size())];
    return s;
  }
  AutotuneKey key(bool plain = false) {
    static const char* precisions[] = {"fp32", "tf32", "fp16"};
    return {text(plain), 1 + static_cast<int>(below(std::numeric_limits<int>::max())), precisions[below(3)],
            text(plain)};
  }
  // plain: times that print without an exponent (k/8 ms), so every byte of the file is a digit
  // whose change changes the value.
  AutotuneChoice choice(bool plain = false) {
    AutotuneChoice c;
    c.algorithm = static_cast<int>(below(cudnn::kConvolutionAlgorithmCount));
    c.fused = below(2) == 1;
    c.workspace_bytes = below(2) ? static_cast<std::size_t>(below(std::uint64_t{1} << 40)) : 0;
    c.time_ms = plain ? static_cast<double>(below(80000)) / 8.0
                      : std::ldexp(static_cast<double>(below(std::uint64_t{1} << 53)), -static_cast<int>(below(70)));
    return c;
  }

 private:
  unsigned seed_;
  std::mt19937_64 gen_;
};

void expect_same(const AutotuneChoice& a, const AutotuneChoice& b) {
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.fused, b.fused);
  EXPECT_EQ(a.workspace_bytes, b.workspace_bytes);
  EXPECT_EQ(a.time_ms, b.time_ms);  // exact: the file keeps every bit of the double
}

// The documented checksum, computed independently of the library: FNV-1a 64 over the compact
// JSON text of the "entries" array.
std::string fnv1a_hex(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// A document edited by a test, with a correct checksum stamped on, so that the edit under test is
// the file's only defect.
std::string restamp(OrderedJson doc) {
  if (doc.contains("entries")) doc["checksum"] = fnv1a_hex(doc["entries"].dump());
  return doc.dump(2) + "\n";
}

// A bad file gives an empty cache and one line "<source>: <problem>".
void expect_rejected(const AutotuneCache& cache, const std::string& source, const std::string& why) {
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.dirty());
  EXPECT_EQ(cache.problem().rfind(source + ": ", 0), 0u) << cache.problem();
  EXPECT_EQ(cache.problem().find('\n'), std::string::npos) << cache.problem();
  EXPECT_NE(cache.problem().find(why), std::string::npos) << "expected \"" << why << "\" in: " << cache.problem();
}

AutotuneCache random_cache(RandomEntries& rnd, int n, bool plain = false) {
  AutotuneCache cache;
  for (int i = 0; i < n; ++i) cache.put(rnd.key(plain), rnd.choice(plain));
  return cache;
}

TEST(AutotuneCache, RoundTripsRandomEntries) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  std::vector<std::pair<AutotuneKey, AutotuneChoice>> entries;
  AutotuneCache cache;
  for (int i = 0; i < 200; ++i) {
    entries.emplace_back(rnd.key(), rnd.choice());
    cache.put(entries.back().first, entries.back().second);
  }
  ASSERT_EQ(cache.size(), entries.size());
  const std::string text = cache.serialize();
  const AutotuneCache back = AutotuneCache::parse(text, "cache.json");
  ASSERT_EQ(back.problem(), "");
  ASSERT_EQ(back.size(), entries.size());
  EXPECT_FALSE(back.dirty());
  for (const auto& [key, choice] : entries) {
    const std::optional<AutotuneChoice> found = back.find(key);
    ASSERT_TRUE(found.has_value()) << key.device << " / " << key.shape;
    expect_same(*found, choice);
  }
  EXPECT_EQ(back.serialize(), text);
}

TEST(AutotuneCache, ChecksumIsFnv1aOfTheCompactEntries) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  const std::string text = random_cache(rnd, 5).serialize();
  const OrderedJson doc = OrderedJson::parse(text);
  EXPECT_EQ(doc["format"], "infer-autotune-cache");
  EXPECT_EQ(doc["version"], 1);
  ASSERT_EQ(doc["entries"].size(), 5u);
  EXPECT_EQ(doc["checksum"], fnv1a_hex(doc["entries"].dump()));
  std::vector<std::string> members;
  for (const auto& item : doc["entries"][0].items()) members.push_back(item.key());
  EXPECT_EQ(members, (std::vector<std::string>{"device", "cudnn_version", "precision", "shape", "algorithm", "fused",
                                               "workspace_bytes", "time_ms"}));
}

TEST(AutotuneCache, FindMissesWhenAnyKeyFieldDiffers) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  AutotuneCache cache;
  const AutotuneKey key = rnd.key();
  const AutotuneChoice choice = rnd.choice();
  cache.put(key, choice);
  ASSERT_TRUE(cache.find(key).has_value());
  expect_same(*cache.find(key), choice);

  AutotuneKey k = key;
  k.device += "x";
  EXPECT_FALSE(cache.find(k).has_value()) << "device";
  k = key;
  k.cudnn_version = key.cudnn_version == 1 ? 2 : key.cudnn_version - 1;
  EXPECT_FALSE(cache.find(k).has_value()) << "cudnn_version";
  k = key;
  k.precision = key.precision == "fp16" ? "fp32" : "fp16";
  EXPECT_FALSE(cache.find(k).has_value()) << "precision";
  k = key;
  k.shape = key.shape.substr(0, key.shape.size() - 1) + "#";
  EXPECT_FALSE(cache.find(k).has_value()) << "shape";
  EXPECT_FALSE(AutotuneCache().find(key).has_value());
}

TEST(AutotuneCache, PutReplacesAndTracksDirty) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  const AutotuneCache saved = random_cache(rnd, 3);
  AutotuneCache cache = AutotuneCache::parse(saved.serialize(), "cache.json");
  ASSERT_EQ(cache.problem(), "");
  EXPECT_FALSE(cache.dirty());

  const AutotuneKey key = rnd.key();
  AutotuneChoice first = rnd.choice();
  cache.put(key, first);
  EXPECT_TRUE(cache.dirty());
  EXPECT_EQ(cache.size(), 4u);

  cache = AutotuneCache::parse(cache.serialize(), "cache.json");
  cache.put(key, first);  // the same choice again: nothing changes
  EXPECT_FALSE(cache.dirty());

  AutotuneChoice second = first;
  second.algorithm = (first.algorithm + 1) % cudnn::kConvolutionAlgorithmCount;
  second.fused = !first.fused;
  second.workspace_bytes = first.workspace_bytes + 256;
  second.time_ms = first.time_ms * 2 + 1;
  cache.put(key, second);
  EXPECT_TRUE(cache.dirty());
  EXPECT_EQ(cache.size(), 4u);
  expect_same(*cache.find(key), second);
}

TEST(AutotuneCache, SerializationIsDeterministicAndSorted) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  std::vector<std::pair<AutotuneKey, AutotuneChoice>> entries;
  for (int i = 0; i < 50; ++i) entries.emplace_back(rnd.key(), rnd.choice());
  AutotuneCache forward;
  AutotuneCache backward;
  for (const auto& [k, c] : entries) forward.put(k, c);
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) backward.put(it->first, it->second);
  const std::string text = forward.serialize();
  EXPECT_EQ(text, backward.serialize());
  EXPECT_EQ(text, forward.serialize());
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("\n  \"entries\": [\n"), std::string::npos) << "pretty-printed";

  const OrderedJson doc = OrderedJson::parse(text);
  std::vector<std::string> devices;
  for (const OrderedJson& e : doc["entries"]) devices.push_back(e["device"].get<std::string>());
  EXPECT_TRUE(std::is_sorted(devices.begin(), devices.end()));
}

TEST(AutotuneCache, PutRejectsWhatTheFileCannotHold) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  const AutotuneKey key = rnd.key();
  const AutotuneChoice choice = rnd.choice();
  AutotuneCache cache;
  const auto with_choice = [&](auto edit) {
    AutotuneChoice c = choice;
    edit(c);
    return c;
  };
  const auto with_key = [&](auto edit) {
    AutotuneKey k = key;
    edit(k);
    return k;
  };
  EXPECT_THROW(cache.put(key, with_choice([](AutotuneChoice& c) { c.algorithm = cudnn::kConvolutionAlgorithmCount; })),
               std::invalid_argument);
  EXPECT_THROW(cache.put(key, with_choice([](AutotuneChoice& c) { c.algorithm = -1; })), std::invalid_argument);
  EXPECT_THROW(cache.put(key, with_choice([](AutotuneChoice& c) { c.time_ms = -0.25; })), std::invalid_argument);
  EXPECT_THROW(cache.put(key, with_choice([](AutotuneChoice& c) { c.time_ms = std::nan(""); })), std::invalid_argument);
  EXPECT_THROW(cache.put(key, with_choice([](AutotuneChoice& c) { c.time_ms = HUGE_VAL; })), std::invalid_argument);
  EXPECT_THROW(cache.put(with_key([](AutotuneKey& k) { k.device.clear(); }), choice), std::invalid_argument);
  EXPECT_THROW(cache.put(with_key([](AutotuneKey& k) { k.shape.clear(); }), choice), std::invalid_argument);
  EXPECT_THROW(cache.put(with_key([](AutotuneKey& k) { k.precision = "bf16"; }), choice), std::invalid_argument);
  EXPECT_THROW(cache.put(with_key([](AutotuneKey& k) { k.cudnn_version = 0; }), choice), std::invalid_argument);
  EXPECT_THROW(cache.put(with_key([](AutotuneKey& k) { k.device += "\xff"; }), choice), std::invalid_argument);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.dirty());
  try {
    cache.put(key, with_choice([](AutotuneChoice& c) { c.algorithm = 8; }));
    FAIL() << "algorithm 8 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"algorithm\" is 8, expected an integer in [0, 7]"), std::string::npos)
        << e.what();
  }
  cache.put(key, choice);  // the boundaries themselves are fine
  cache.put(with_key([](AutotuneKey& k) { k.precision = "fp16"; }),
            with_choice([](AutotuneChoice& c) { c.algorithm = 7, c.time_ms = 0, c.workspace_bytes = SIZE_MAX; }));
  EXPECT_EQ(AutotuneCache::parse(cache.serialize(), "c").problem(), "");
}

TEST(AutotuneCache, EveryTruncationIsAProblem) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  const std::string text = random_cache(rnd, 2).serialize();
  for (std::size_t n = 0; n < text.size(); ++n) {
    SCOPED_TRACE("first " + std::to_string(n) + " of " + std::to_string(text.size()) + " bytes");
    expect_rejected(AutotuneCache::parse(text.substr(0, n), "/cache/autotune.json"), "/cache/autotune.json",
                    n == 0 ? "empty file" : "truncated");
  }
}

TEST(AutotuneCache, EverySingleBitFlipIsAProblem) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  const std::string text = random_cache(rnd, 2, /*plain=*/true).serialize();
  ASSERT_EQ(AutotuneCache::parse(text, "c").problem(), "");
  int checksum_mismatches = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = text;
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      const AutotuneCache cache = AutotuneCache::parse(flipped, "flipped.json");
      EXPECT_EQ(cache.size(), 0u) << "byte " << i << " ('" << text[i] << "') bit " << bit;
      EXPECT_EQ(cache.problem().rfind("flipped.json: ", 0), 0u) << "byte " << i << " bit " << bit;
      checksum_mismatches += cache.problem().find("checksum mismatch") != std::string::npos;
    }
  }
  EXPECT_GT(checksum_mismatches, 100) << "value changes are caught by the checksum";
}

TEST(AutotuneCache, EveryKindOfBadContentIsNamed) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  const std::string text = random_cache(rnd, 3).serialize();
  const OrderedJson good = OrderedJson::parse(text);
  ASSERT_EQ(AutotuneCache::parse(restamp(good), "c").problem(), "") << "restamp() computes the documented checksum";

  const auto edited = [&](auto edit) {
    OrderedJson doc = good;
    edit(doc);
    return restamp(doc);
  };
  const auto edited_raw = [&](auto edit) {  // checksum left as it is
    OrderedJson doc = good;
    edit(doc);
    return doc.dump(2) + "\n";
  };
  struct Case {
    std::string what;
    std::string text;
    std::string why;
  };
  const auto replaced = [](std::string s, const std::string& from, const std::string& to) {
    const std::size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? s : s.replace(at, from.size(), to);
  };
  std::string hand_edited = text;
  hand_edited.replace(hand_edited.find("\"algorithm\": ") + 13, 1,
                      std::to_string((good["entries"][0]["algorithm"].get<int>() + 1) % 8));
  const std::vector<Case> cases = {
      {"empty file", "", "empty file"},
      {"not JSON", "algorithm = 1\n", "not JSON"},
      {"binary", std::string("\x89PNG\r\n\x1a\n\0\0", 10), "not JSON"},
      {"a JSON array", "[]\n", "expected a JSON object"},
      {"no newline at the end", text.substr(0, text.size() - 1), "does not end with a newline"},
      {"hand edit", hand_edited, "checksum mismatch"},
      {"wrong format", edited([](OrderedJson& d) { d["format"] = "infer-model"; }), "not an autotune cache"},
      {"wrong version", edited([](OrderedJson& d) { d["version"] = 2; }),
       "\"version\" is 2, this build reads version 1"},
      {"version as text", edited([](OrderedJson& d) { d["version"] = "1"; }), "\"version\" is the string \"1\""},
      {"unknown member", edited([](OrderedJson& d) { d["comment"] = "x"; }), "unknown member the string \"comment\""},
      {"entries not an array", edited([](OrderedJson& d) { d["entries"] = OrderedJson::object(); }),
       "\"entries\" is an object, expected an array"},
      {"entry not an object", edited([](OrderedJson& d) { d["entries"][1] = 5; }), "entries[1]: is 5"},
      {"algorithm 8", edited([](OrderedJson& d) { d["entries"][0]["algorithm"] = 8; }),
       "entries[0]: \"algorithm\" is 8, expected an integer in [0, 7]"},
      {"algorithm -1", edited([](OrderedJson& d) { d["entries"][2]["algorithm"] = -1; }),
       "entries[2]: \"algorithm\" is -1"},
      {"algorithm 1.0", edited([](OrderedJson& d) { d["entries"][0]["algorithm"] = 1.0; }), "\"algorithm\" is 1.0"},
      {"workspace negative", edited([](OrderedJson& d) { d["entries"][1]["workspace_bytes"] = -4096; }),
       "entries[1]: \"workspace_bytes\" is -4096, expected an integer in [0, 18446744073709551615]"},
      {"cudnn_version 0", edited([](OrderedJson& d) { d["entries"][0]["cudnn_version"] = 0; }),
       "\"cudnn_version\" is 0"},
      {"cudnn_version too large", edited([](OrderedJson& d) { d["entries"][0]["cudnn_version"] = 1ll << 31; }),
       "\"cudnn_version\" is 2147483648"},
      {"precision bf16", edited([](OrderedJson& d) { d["entries"][0]["precision"] = "bf16"; }),
       "\"precision\" is the string \"bf16\""},
      {"empty device", edited([](OrderedJson& d) { d["entries"][0]["device"] = ""; }), "\"device\" is empty"},
      {"shape a number", edited([](OrderedJson& d) { d["entries"][0]["shape"] = 3; }), "\"shape\" is 3"},
      {"fused as 1", edited([](OrderedJson& d) { d["entries"][0]["fused"] = 1; }),
       "\"fused\" is 1, expected true or false"},
      {"time negative", edited([](OrderedJson& d) { d["entries"][0]["time_ms"] = -0.5; }), "\"time_ms\" is -0.5"},
      {"time as text", edited([](OrderedJson& d) { d["entries"][0]["time_ms"] = "0.5"; }), "\"time_ms\" is the string"},
      {"time overflows",
       replaced(edited([](OrderedJson& d) { d["entries"][0]["time_ms"] = 1.5; }), "\"time_ms\": 1.5",
                "\"time_ms\": 1e999"),
       "not JSON"},
      {"missing member", edited([](OrderedJson& d) { d["entries"][1].erase("fused"); }),
       "entries[1]: \"fused\" is missing"},
      {"unknown entry member", edited([](OrderedJson& d) { d["entries"][1]["speed"] = 1; }),
       "entries[1]: unknown member"},
      {"duplicate key", edited([](OrderedJson& d) { d["entries"].push_back(d["entries"][0]); }),
       "entries[3]: the same device, cudnn_version, precision and shape as an earlier entry"},
      {"duplicate key, other choice", edited([](OrderedJson& d) {
         OrderedJson e = d["entries"][1];
         e["algorithm"] = (e["algorithm"].get<int>() + 1) % 8;
         d["entries"].push_back(e);
       }),
       "entries[3]: the same device"},
      {"no checksum", edited_raw([](OrderedJson& d) { d.erase("checksum"); }), "\"checksum\" is missing"},
      {"checksum in capitals", edited_raw([](OrderedJson& d) {
         std::string c = d["checksum"].get<std::string>();
         std::transform(c.begin(), c.end(), c.begin(), [](char ch) { return static_cast<char>(std::toupper(ch)); });
         d["checksum"] = c.find_first_of("ABCDEF") == std::string::npos ? "0123456789ABCDEF" : c;
       }),
       "expected 16 lowercase hex digits"},
      {"checksum a number", edited_raw([](OrderedJson& d) { d["checksum"] = 12345; }), "\"checksum\" is 12345"},
      {"too large", text + std::string(cudnn::kAutotuneCacheMaxBytes, ' '), "too large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    expect_rejected(AutotuneCache::parse(c.text, "/var/cache/infer/autotune.json"), "/var/cache/infer/autotune.json",
                    c.why);
  }
}

TEST(AutotuneCache, LoadOfAMissingFileIsEmptyWithoutProblem) {
  TempDir dir;
  for (const fs::path& p : {dir / "autotune.json", dir / "no" / "such" / "folder" / "autotune.json", fs::path()}) {
    const AutotuneCache cache = AutotuneCache::load(p);
    EXPECT_EQ(cache.size(), 0u) << p;
    EXPECT_EQ(cache.problem(), "") << p;
    EXPECT_FALSE(cache.dirty()) << p;
  }
}

TEST(AutotuneCache, LoadReportsFilesThatCannotBeRead) {
  TempDir dir;
  fs::create_directories(dir / "folder.json");
  expect_rejected(AutotuneCache::load(dir / "folder.json"), (dir / "folder.json").string(), "is a folder");

  write_file(dir / "plain", "x");
  expect_rejected(AutotuneCache::load(dir / "plain" / "autotune.json"), (dir / "plain" / "autotune.json").string(),
                  "cannot read");

  const fs::path big = dir / "big.json";
  write_file(big, "{");
  fs::resize_file(big, cudnn::kAutotuneCacheMaxBytes + 1);  // sparse: no 16 MiB written
  expect_rejected(AutotuneCache::load(big), big.string(), "too large: 16777217 bytes");

  write_file(dir / "bad.json", "{\"format\": \"infer-autotune-cache\", \"version\": 7}\n");
  expect_rejected(AutotuneCache::load(dir / "bad.json"), (dir / "bad.json").string(), "\"version\" is 7");
}

TEST(AutotuneCache, SaveThenLoadGivesTheSameCacheAndLeavesOnlyTheFile) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  TempDir dir;
  const fs::path path = dir / "new" / "nested" / "autotune.json";
  AutotuneCache cache = random_cache(rnd, 20);
  ASSERT_TRUE(cache.dirty());
  cache.save(path);
  EXPECT_FALSE(cache.dirty());
  EXPECT_EQ(files_in(path.parent_path()), std::vector<std::string>{"autotune.json"}) << "no temporary file left";
  EXPECT_EQ(slurp(path), cache.serialize());
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::owner_read, fs::perms::owner_read);

  AutotuneCache loaded = AutotuneCache::load(path);
  ASSERT_EQ(loaded.problem(), "");
  EXPECT_EQ(loaded.size(), 20u);
  EXPECT_EQ(loaded.serialize(), cache.serialize());

  // Replacing an existing file.
  loaded.put(rnd.key(), rnd.choice());
  loaded.save(path);
  EXPECT_EQ(AutotuneCache::load(path).size(), 21u);
  EXPECT_EQ(files_in(path.parent_path()), std::vector<std::string>{"autotune.json"});
}

TEST(AutotuneCache, SaveWhereNoFolderCanBeMadeThrowsAndLeavesNothing) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  TempDir dir;
  write_file(dir / "file", "not a folder");
  const fs::path path = dir / "file" / "autotune.json";
  AutotuneCache cache = random_cache(rnd, 2);
  try {
    cache.save(path);
    FAIL() << "save into a path whose parent is a regular file succeeded";
  } catch (const AutotuneCacheError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ": ", 0), 0u) << e.what();
    EXPECT_EQ(e.path(), path.string());
  }
  EXPECT_TRUE(cache.dirty()) << "nothing was saved";
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"file"});
  EXPECT_EQ(slurp(dir / "file"), "not a folder");
  EXPECT_THROW(cache.save(fs::path()), AutotuneCacheError);
}

// A write that fails half-way (the file-size limit, which binds root too): the old file is intact
// and the temporary file is gone.
TEST(AutotuneCache, SaveThatFailsMidWriteKeepsTheOldFile) {
  RandomEntries rnd;
  SCOPED_TRACE(rnd.trace());
  TempDir dir;
  const fs::path path = dir / "autotune.json";
  random_cache(rnd, 1).save(path);
  const std::string old = slurp(path);
  AutotuneCache bigger = random_cache(rnd, 50);
  ASSERT_GT(bigger.serialize().size(), old.size() + 4096);

  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = static_cast<rlim_t>(old.size() + 1024);
  const sighandler_t previous = signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string what;
  try {
    bigger.save(path);
  } catch (const AutotuneCacheError& e) {
    what = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, previous);

  EXPECT_EQ(what.rfind(path.string() + ": cannot write", 0), 0u) << what;
  EXPECT_EQ(slurp(path), old);
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"autotune.json"}) << "no temporary file left";
  EXPECT_TRUE(bigger.dirty());
}

// The seeds of tests/fuzz/corpus/fuzz_autotune_cache (written by make_corpus.py, which computes the
// checksum itself): valid-* parse cleanly, every other seed is rejected.
TEST(AutotuneCache, FuzzSeedsParseAsTheirNamesSay) {
  const fs::path dir = fs::path(test_file("tests/fuzz/corpus/fuzz_autotune_cache"));
  int valid = 0;
  int invalid = 0;
  for (const std::string& name : files_in(dir)) {
    SCOPED_TRACE(name);
    const AutotuneCache cache = AutotuneCache::load(dir / name);
    if (name.rfind("valid-", 0) == 0) {
      EXPECT_EQ(cache.problem(), "");
      ++valid;
    } else {
      EXPECT_NE(cache.problem(), "");
      ++invalid;
    }
  }
  EXPECT_GE(valid, 2);
  EXPECT_GE(invalid, 2);
}

// Sets or unsets the three variables for one test and restores them afterwards.
class AutotuneCachePath : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) set(name, value);
  }
  static void set(const std::string& name, const std::optional<std::string>& value) {
    if (value) {
      setenv(name.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
  static void env(std::optional<std::string> cache, std::optional<std::string> xdg, std::optional<std::string> home) {
    set("INFER_AUTOTUNE_CACHE", cache);
    set("XDG_CACHE_HOME", xdg);
    set("HOME", home);
  }
  static constexpr const char* kNames[] = {"INFER_AUTOTUNE_CACHE", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(AutotuneCachePath, FollowsTheEnvironmentInOrder) {
  env("/data/tune.json", "/xdg", "/home/u");
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path("/data/tune.json"));
  env("", "/xdg", "/home/u");
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path("/xdg/infer/autotune.json"));
  env(std::nullopt, "/xdg", "/home/u");
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path("/xdg/infer/autotune.json"));
  env(std::nullopt, "", "/home/u");
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path("/home/u/.cache/infer/autotune.json"));
  env(std::nullopt, "relative/cache", "/home/u");  // the XDG spec ignores relative paths
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path("/home/u/.cache/infer/autotune.json"));
  env(std::nullopt, std::nullopt, "/home/u");
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path("/home/u/.cache/infer/autotune.json"));
  env(std::nullopt, std::nullopt, std::nullopt);
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path());
  env("", "", "");
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path());
  env("relative.json", std::nullopt, std::nullopt);  // taken as given, relative to the working folder
  EXPECT_EQ(cudnn::default_autotune_cache_path(), fs::path("relative.json"));
}

}  // namespace
}  // namespace infer::test

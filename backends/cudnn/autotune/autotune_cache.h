// The cuDNN autotune cache: which forward-convolution algorithm won the measurement for one
// convolution call on one GPU, cuDNN version and precision, kept in a JSON file so that later runs
// skip the measurement. Host code only (no CUDA or cuDNN header): built and tested on every machine.
//
// File format (UTF-8 JSON, written by serialize(); the file ends with a newline):
//   {
//     "format": "infer-autotune-cache",
//     "version": 1,
//     "entries": [
//       {"device": "NVIDIA H200 (sm_90)", "cudnn_version": 91900, "precision": "tf32",
//        "shape": "...", "algorithm": 1, "fused": true, "workspace_bytes": 0, "time_ms": 0.042},
//       ...
//     ],
//     "checksum": "0123456789abcdef"
//   }
// Entries are sorted by key (device, cudnn_version, precision, shape; strings compared bytewise),
// members in the order above. Every member is required and typed strictly:
//   device, shape         non-empty strings
//   cudnn_version         integer, 1 <= v <= INT_MAX
//   precision             "fp32", "tf32" or "fp16"
//   algorithm             integer, 0 <= a < kConvolutionAlgorithmCount
//   fused                 true or false
//   workspace_bytes       integer, 0 <= w <= SIZE_MAX
//   time_ms               number, finite, >= 0
// No two entries have the same key. Unknown members, at the top level or in an entry, are
// rejected: a format change bumps "version" instead. (A member written twice in one object counts
// once, with its last value, as the JSON library reads it.) A file that does not end with a newline
// is reported as truncated.
// "checksum" is 16 lowercase hex digits: FNV-1a 64 over the compact JSON text of the "entries"
// array (entries sorted, members in the order above, no whitespace, numbers as nlohmann::json
// writes them). Reading recomputes it from the values read, so whitespace, entry order and number
// spelling ("1.50") do not matter. It detects truncation, bit flips and hand edits; it is NOT a
// security measure (anyone can recompute it). The cache is a performance hint: a choice read back
// is in range, but whether cuDNN still accepts it (workspace, support) is for the caller to check.
//
// Concurrency: an AutotuneCache object is not synchronized. Between processes, save() replaces the
// file atomically (rename), so a reader sees the old or the new file, never a mix; when two
// processes save, the last one wins.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "infer/errors.h"

namespace infer::cudnn {

// CUDNN_CONVOLUTION_FWD_ALGO_COUNT in cuDNN 9 (the executor static_asserts it).
constexpr int kConvolutionAlgorithmCount = 8;

// The largest cache file load() and parse() accept.
constexpr std::size_t kAutotuneCacheMaxBytes = std::size_t{16} << 20;

struct AutotuneKey {
  std::string device;     // GPU name and compute capability, e.g. "NVIDIA H200 (sm_90)"; non-empty
  int cudnn_version = 0;  // cudnnGetVersion(), e.g. 91900; > 0
  std::string precision;  // "fp32", "tf32" or "fp16"
  std::string shape;  // canonical description of the convolution call incl. batch size, made by the executor; non-empty
  bool operator==(const AutotuneKey& other) const;
};

struct AutotuneChoice {
  int algorithm = 0;   // cudnnConvolutionFwdAlgo_t value, 0 <= algorithm < kConvolutionAlgorithmCount
  bool fused = false;  // runs as cudnnConvolutionBiasActivationForward
  std::size_t workspace_bytes = 0;
  double time_ms = 0.0;  // measured time of the winner, >= 0, finite
};

// A cache file cannot be written. what() is "<path>: <problem>", one line.
class AutotuneCacheError : public Error {
 public:
  AutotuneCacheError(const std::string& path, const std::string& problem)
      : Error(path + ": " + problem), path_(path), problem_(problem) {}
  const std::string& path() const { return path_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

class AutotuneCache {
 public:
  AutotuneCache() = default;

  // A missing file (or an empty path) is an empty cache with no problem. A file that cannot be read
  // or is not a valid cache (not JSON, wrong "format"/"version", a malformed or out-of-range entry,
  // duplicate keys, a checksum mismatch, truncated, larger than kAutotuneCacheMaxBytes) gives an
  // EMPTY cache whose problem() says why in one line, "<path>: <problem>", so that the caller can
  // warn and re-measure. Never throws for bad content (only std::bad_alloc).
  static AutotuneCache load(const std::filesystem::path& path);
  // The same rules on a text; `source` names it in problem().
  static AutotuneCache parse(std::string_view text, const std::string& source);

  std::optional<AutotuneChoice> find(const AutotuneKey& key) const;
  // Adds or replaces the entry of `key`. Throws std::invalid_argument, saying which field and why,
  // for a key or choice the file format cannot hold (see above): load() would reject it.
  void put(const AutotuneKey& key, const AutotuneChoice& choice);

  bool dirty() const { return dirty_; }  // put() changed something since load/parse/save
  std::size_t size() const { return entries_.size(); }
  const std::string& problem() const { return problem_; }  // empty when the file was fine or missing

  // Deterministic (entries sorted by key), pretty JSON, ends with '\n'.
  std::string serialize() const;
  // Atomic write: creates missing parent folders, writes a temporary file in the same folder,
  // flushes it to disk, moves it over `path` (autotune_cache_file.h). On any failure the temporary file is removed, an existing
  // file at `path` is left as it was, and AutotuneCacheError names the path. Clears dirty().
  void save(const std::filesystem::path& path);

 private:
  struct KeyLess {
    bool operator()(const AutotuneKey& a, const AutotuneKey& b) const;
  };
  std::map<AutotuneKey, AutotuneChoice, KeyLess> entries_;
  std::string problem_;
  bool dirty_ = false;
};

// Where the cache lives: $INFER_AUTOTUNE_CACHE if set and non-empty, else
// $XDG_CACHE_HOME/infer/autotune.json if $XDG_CACHE_HOME is an absolute path (the XDG spec ignores a
// relative one), else $HOME/.cache/infer/autotune.json if $HOME is non-empty, else an empty path
// meaning "no cache location". On Windows: %INFER_AUTOTUNE_CACHE%, else
// %LOCALAPPDATA%\infer\autotune.json (per user, not roamed), else none.
std::filesystem::path default_autotune_cache_path();

}  // namespace infer::cudnn

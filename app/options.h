// The command line of `infer`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "infer/classifier.h"
#include "infer/device.h"

namespace infer::app {

// A command-line path as a path. Arguments are UTF-8 on both systems (the Windows build's wmain
// converts them from UTF-16), and std::filesystem::path(std::string) would read them in the ANSI
// code page on Windows.
inline std::filesystem::path arg_path(const std::string& utf8) { return std::filesystem::u8path(utf8); }

// --shard I/N: part I of N (0 <= I < N); 0/1 is every input.
struct Shard {
  int index = 0;
  int count = 1;
};

struct Options {
  std::vector<std::string> inputs;  // image files and directories
  std::string model;                // empty: the shipped model
  Device device = Device::Auto;
  // Overrides of the model's preprocessing ([input] in its TOML); unset: the model's.
  PreprocessingOverrides preprocessing;
  int top_k = 3;
  int batch = 64;
  int threads = 0;  // --threads: CPU threads (oneDNN's OpenMP and the sgemm's); 0: every core
  std::uint64_t max_memory = std::uint64_t{4} << 30;  // --max-memory: bytes a run may plan for its model
  bool json = false;
  bool softmax = false;  // --softmax: a model without a final softmax prints probabilities, not scores
  bool version = false;
  bool check = false;                     // --check: report the environment against the manifest and exit
  std::string write_manifest;             // --write-manifest PATH: write a manifest describing this machine and exit
  std::string manifest;                   // --manifest PATH; empty: the shipped VERSIONS.toml
  bool no_verify = false;                 // --no-verify: skip the start-up check and the model digests
  Precision precision = Precision::Fp32;  // --precision; tf32 and fp16 need the GPU
  int cuda_major = 0;                     // --cuda 12|13; 0 (auto): $INFER_CUDA, else the newest that runs
  bool autotune = false;                  // --autotune: measure convolution algorithms, cached in autotune_cache
  std::string autotune_cache;             // --autotune-cache PATH; empty: the default cache file
  bool verbose = false;                   // -v/--verbose: the GPU backend's choices on stderr
  std::string nfd;                        // --nfd PATH (with --check): the report as an NFD feature file
  int nfd_expiry = 3600;                  // --nfd-expiry SECONDS: how long NFD keeps those labels
  Shard shard;                            // --shard I/N: this process's part of the inputs
  std::string output;                     // --output FILE: the results, written atomically when the run ends
};

// Parses argv. Returns the options, or an exit code when parsing already finished the run
// (--help printed: 0; a usage error printed: kExitUsage).
struct ParseResult {
  Options options;
  std::optional<int> exit_code;
};
ParseResult parse_options(int argc, char** argv);

}  // namespace infer::app

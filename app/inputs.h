// The command line's image arguments, expanded: a directory stands for the images in it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace infer::app {

// One image to classify, or an argument that already failed (with its message).
struct Input {
  std::string path;
  std::string error;  // empty when the path is to be decoded
  // What --shard hashes: the path relative to its directory argument (the same wherever that
  // directory is mounted), or a file argument as given.
  std::string shard_key;
};

// Each argument in order; a directory becomes its entries with an image extension, sorted by name.
// A directory that cannot be listed or holds no image is an Input with an error.
std::vector<Input> expand_inputs(const std::vector<std::string>& args);

// The inputs of shard.index of shard.count, in order: those whose FNV-1a 64 hash of shard_key,
// modulo count, is index. An argument that failed (a directory that cannot be listed) stays in
// every shard, so that each part reports it.
std::vector<Input> select_shard(std::vector<Input> inputs, int index, int count);

// FNV-1a, 64 bits, of the bytes of text: stable across runs, machines and builds.
std::uint64_t fnv1a64(std::string_view text);

}  // namespace infer::app

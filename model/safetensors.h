// Reader for the safetensors format (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON mapping tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]}, then the raw little-endian data.
// Every file is untrusted: sizes, offsets, overlaps and dtypes are all validated on open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace infer {

struct SafetensorsEntry {
  std::string dtype;             // "F32", "U8", ... as in the file
  std::vector<long long> shape;  // may be empty for a scalar
  std::size_t begin = 0;         // byte offsets into the data section
  std::size_t end = 0;
};

class SafetensorsFile {
 public:
  // Reads and validates the whole file. Throws InputError naming the file and the problem.
  explicit SafetensorsFile(const std::filesystem::path& path);
  // Validates bytes already in memory; `name` stands for the file in error messages (the fuzz target).
  SafetensorsFile(const std::string& name, std::vector<std::uint8_t> bytes);

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  const SafetensorsEntry& entry(const std::string& name) const;  // throws InputError if absent

  // Tensor data converted to host order. Throws InputError if the tensor is absent or its dtype
  // is not the one asked for.
  std::vector<float> read_f32(const std::string& name) const;
  std::vector<std::uint8_t> read_u8(const std::string& name) const;

 private:
  void parse();  // validates bytes_ and fills entries_ and metadata_

  std::filesystem::path path_;
  std::vector<std::uint8_t> bytes_;
  std::size_t data_start_ = 0;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Size in bytes of one element of a safetensors dtype, or 0 for an unknown dtype.
std::size_t safetensors_dtype_size(const std::string& dtype);

}  // namespace infer

// Reader for the safetensors format (https://huggingface.co/docs/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON mapping tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]}, then the raw little-endian data.
// Every file is untrusted: sizes, offsets, overlaps and dtypes are all validated on open.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "platform/input_file.h"

namespace infer {

struct SafetensorsEntry {
  std::string dtype;             // "F32", "U8", ... as in the file
  std::vector<long long> shape;  // may be empty for a scalar
  std::size_t begin = 0;         // byte offsets into the data section
  std::size_t end = 0;
};

class SafetensorsFile {
 public:
  // Reads and validates the header; the file stays open and each tensor's bytes are read when it is
  // asked for. Throws InputError naming the file and the problem (also for a file that is not a
  // regular one: see InputFile).
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
  // Checks the header's length against kMaxHeaderBytes and the `after` bytes that follow the
  // length field; sets data_start_. Returns the length.
  std::uint64_t check_header_length(std::uint64_t header_len, std::uint64_t after);
  // Validates the JSON header against a data section of data_bytes; fills entries_ and metadata_.
  void parse(const std::string& header_text, std::uint64_t data_bytes);
  std::vector<std::uint8_t> data(const SafetensorsEntry& e) const;  // the tensor's raw bytes

  std::filesystem::path path_;
  std::optional<InputFile> file_;    // the file, when read from one
  std::vector<std::uint8_t> bytes_;  // the whole file, when given in memory
  std::size_t data_start_ = 0;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// Size in bytes of one element of a safetensors dtype, or 0 for an unknown dtype.
std::size_t safetensors_dtype_size(const std::string& dtype);

}  // namespace infer

#include "formats/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "infer/errors.h"
#include "platform/input_file.h"

namespace infer {
namespace {

// A header larger than this is refused before it is read: real headers are a few KB per thousand
// tensors, and the reference implementation uses the same 100 MB limit.
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;

std::uint64_t read_le64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, std::size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2}, {"I16", 2}, {"F16", 2},
      {"BF16", 2}, {"U32", 4}, {"I32", 4}, {"F32", 4},     {"U64", 8},     {"I64", 8}, {"F64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path), file_(InputFile(path)) {
  const std::uint64_t size = file_->size();
  if (size < 8)
    throw InputError(file_->name(), "not a safetensors file: " + std::to_string(size) + " bytes, need at least 8");
  // Only the header is read now, after its length is checked; a tensor's bytes are read when it is
  // asked for, so a file is never read further than the tensors the model uses.
  std::uint8_t length[8];
  file_->read_at(0, length, 8);
  const std::uint64_t header_len = check_header_length(read_le64(length), size - 8);
  std::string header(static_cast<std::size_t>(header_len), '\0');
  file_->read_at(8, header.data(), header.size());
  parse(header, size - 8 - header_len);
}

SafetensorsFile::SafetensorsFile(const std::string& name, std::vector<std::uint8_t> bytes)
    : path_(name), bytes_(std::move(bytes)) {
  if (bytes_.size() < 8) {
    throw InputError(name, "not a safetensors file: " + std::to_string(bytes_.size()) + " bytes, need at least 8");
  }
  const std::uint64_t header_len = check_header_length(read_le64(bytes_.data()), bytes_.size() - 8);
  const std::string header(bytes_.begin() + 8, bytes_.begin() + 8 + static_cast<std::ptrdiff_t>(header_len));
  parse(header, bytes_.size() - 8 - header_len);
}

std::uint64_t SafetensorsFile::check_header_length(std::uint64_t header_len, std::uint64_t after) {
  const std::string file = path_.u8string();
  if (header_len > kMaxHeaderBytes) {
    throw InputError(file, "safetensors header claims " + std::to_string(header_len) + " bytes (limit " +
                               std::to_string(kMaxHeaderBytes) + ")");
  }
  if (header_len > after) {
    throw InputError(file, "safetensors header claims " + std::to_string(header_len) + " bytes but the file has only " +
                               std::to_string(after) + " after it");
  }
  data_start_ = 8 + static_cast<std::size_t>(header_len);
  return header_len;
}

void SafetensorsFile::parse(const std::string& header_text, std::uint64_t data_bytes) {
  const std::string file = path_.u8string();
  const auto data_size = static_cast<std::size_t>(data_bytes);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, std::string("safetensors header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) throw InputError(file, "safetensors header is not a JSON object");

  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw InputError(file, "__metadata__ must be an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) throw InputError(file, "__metadata__ value '" + m.key() + "' is not a string");
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "': ";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
      throw InputError(file, where + "needs dtype, shape and data_offsets");
    }
    SafetensorsEntry e;
    if (!v["dtype"].is_string()) throw InputError(file, where + "dtype is not a string");
    e.dtype = v["dtype"].get<std::string>();
    const std::size_t elem = safetensors_dtype_size(e.dtype);
    if (elem == 0) throw InputError(file, where + "unknown dtype '" + e.dtype + "'");

    const nlohmann::json& shape = v["shape"];
    if (!shape.is_array()) throw InputError(file, where + "shape is not an array");
    // Count elements with overflow checks: a hostile header can declare huge shapes.
    std::size_t count = 1;
    for (const nlohmann::json& d : shape) {
      if (!d.is_number_unsigned())
        throw InputError(file, where + "shape has a value that is not a non-negative integer");
      const std::uint64_t dim = d.get<std::uint64_t>();
      // Shapes are kept as signed 64-bit numbers; a larger dim (possible next to a 0) would read back negative.
      if (dim > static_cast<std::uint64_t>(std::numeric_limits<long long>::max())) {
        throw InputError(file, where + "shape value " + std::to_string(dim) + " is too large");
      }
      if (dim != 0 && count > std::numeric_limits<std::size_t>::max() / elem / dim) {
        throw InputError(file, where + "declared size overflows");
      }
      count *= static_cast<std::size_t>(dim);
      e.shape.push_back(static_cast<long long>(dim));
    }

    const nlohmann::json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      throw InputError(file, where + "data_offsets must be two non-negative integers");
    }
    const std::uint64_t begin = off[0].get<std::uint64_t>();
    const std::uint64_t end = off[1].get<std::uint64_t>();
    if (begin > end || end > data_size) {
      throw InputError(file, where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                                 "] are outside the data section of " + std::to_string(data_size) + " bytes");
    }
    e.begin = static_cast<std::size_t>(begin);
    e.end = static_cast<std::size_t>(end);
    if (e.end - e.begin != count * elem) {
      throw InputError(file, where + "shape and dtype need " + std::to_string(count * elem) +
                                 " bytes but data_offsets span " + std::to_string(e.end - e.begin));
    }
    ranges.emplace_back(e.begin, e.end);
    entries_.emplace(name, std::move(e));
  }

  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) {
      throw InputError(file, "two tensors overlap at data offset " + std::to_string(ranges[i].first));
    }
  }
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw InputError(path_.u8string(), "tensor '" + name + "' is missing");
  return it->second;
}

std::vector<float> SafetensorsFile::read_f32(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  if (e.dtype != "F32")
    throw InputError(path_.u8string(), "tensor '" + name + "' has dtype " + e.dtype + ", expected F32");
  const std::vector<std::uint8_t> raw = data(e);
  std::vector<float> out(raw.size() / 4);
  const std::uint8_t* p = raw.data();
  for (std::size_t i = 0; i < out.size(); ++i, p += 4) {
    const std::uint32_t bits =
        std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 | std::uint32_t(p[3]) << 24;
    std::memcpy(&out[i], &bits, 4);
  }
  return out;
}

std::vector<std::uint8_t> SafetensorsFile::read_u8(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  if (e.dtype != "U8") throw InputError(path_.u8string(), "tensor '" + name + "' has dtype " + e.dtype + ", expected U8");
  return data(e);
}

std::vector<std::uint8_t> SafetensorsFile::data(const SafetensorsEntry& e) const {
  std::vector<std::uint8_t> out(e.end - e.begin);
  if (file_) {
    file_->read_at(data_start_ + e.begin, out.data(), out.size());
  } else {
    std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(data_start_ + e.begin), out.size(), out.begin());
  }
  return out;
}

}  // namespace infer

#include "serve/tensor_data.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "serve/serve_error.h"

namespace infer::serve {
namespace {

std::uint32_t read_u32_le(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return std::uint32_t{b[0]} | std::uint32_t{b[1]} << 8 | std::uint32_t{b[2]} << 16 | std::uint32_t{b[3]} << 24;
}

void append_u32_le(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v & 0xff), static_cast<char>(v >> 8 & 0xff), static_cast<char>(v >> 16 & 0xff),
                     static_cast<char>(v >> 24 & 0xff)};
  out.append(b, 4);
}

}  // namespace

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::size_t element_count(const std::vector<std::int64_t>& shape, const std::string& where) {
  if (shape.size() > kMaxTensorRank)
    throw invalid(where + ": the shape has " + std::to_string(shape.size()) + " dimensions, at most " +
                  std::to_string(kMaxTensorRank) + " are taken");
  std::uint64_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 0) throw invalid(where + ": the shape " + shape_text(shape) + " has a negative size");
    const auto v = static_cast<std::uint64_t>(d);
    if (v != 0 && n > (std::uint64_t{1} << 40) / v)
      throw invalid(where + ": the shape " + shape_text(shape) + " is too large");
    n *= v;
  }
  return static_cast<std::size_t>(n);
}

void check_element_count(const std::string& datatype, std::size_t count, const RequestLimits& limits,
                         const std::string& where) {
  const std::size_t limit = datatype == "BYTES" ? limits.bytes_elements : limits.fp32_elements;
  if (count > limit)
    throw invalid(where + ": " + std::to_string(count) + " elements, over the " + std::to_string(limit) +
                  " that the model's batch holds");
}

void read_binary_tensor(InputTensor& t, std::string_view data, std::size_t count, const std::string& where) {
  if (t.datatype == "FP32") {
    if (data.size() != count * sizeof(float))
      throw invalid(where + ": its binary data is " + std::to_string(data.size()) + " bytes; " + std::to_string(count) +
                    " FP32 elements take " + std::to_string(count * sizeof(float)));
    static_assert(std::numeric_limits<float>::is_iec559, "FP32 is IEEE 754 binary32");
    t.fp32.resize(count);
    std::memcpy(t.fp32.data(), data.data(), data.size());  // little-endian hosts only (x86-64, aarch64)
    return;
  }
  t.bytes.reserve(std::min(count, data.size() / 4));
  std::size_t at = 0;
  while (at < data.size()) {
    if (data.size() - at < 4) throw invalid(where + ": BYTES binary data ends inside an element's length");
    const std::uint32_t n = read_u32_le(data.data() + at);
    at += 4;
    if (n > data.size() - at)
      throw invalid(where + ": a BYTES element says " + std::to_string(n) + " bytes, but only " +
                    std::to_string(data.size() - at) + " are left");
    if (t.bytes.size() == count)
      throw invalid(where + ": binary data has more elements than its shape's " + std::to_string(count));
    t.bytes.emplace_back(data.data() + at, n);
    at += n;
  }
  if (t.bytes.size() != count)
    throw invalid(where + ": binary data has " + std::to_string(t.bytes.size()) + " elements, its shape says " +
                  std::to_string(count));
}

void append_binary_tensor(const OutputTensor& t, std::string& out) {
  if (t.datatype == "FP32") {
    out.append(reinterpret_cast<const char*>(t.fp32.data()), t.fp32.size() * sizeof(float));
    return;
  }
  for (const std::string& s : t.bytes) {
    append_u32_le(out, static_cast<std::uint32_t>(s.size()));
    out += s;
  }
}

}  // namespace infer::serve

#include "formats/onnx_framing.h"

#include <algorithm>
#include <cstring>

namespace infer::onnx_import {
namespace {

constexpr int kModelGraph = 7;            // ModelProto.graph
constexpr int kGraphInitializer = 5;      // GraphProto.initializer
constexpr int kTensorRawData = 9;         // TensorProto.raw_data
constexpr int kLengthDelimited = 2;       // wire type of messages and bytes
constexpr std::size_t kWindow = 1 << 16;  // the file read a window at a time: headers are a few bytes

// The headers of the file, read through a window (most are near the last one read).
class Headers {
 public:
  Headers(const ReadAt& read, std::uint64_t size) : read_(read), size_(size) {}

  // The varint at `at` (moving `at` past it), or nothing past `end` or over 10 bytes.
  std::optional<std::uint64_t> varint(std::uint64_t& at, std::uint64_t end) {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (at >= end) return std::nullopt;
      const unsigned char byte = at_byte(at++);
      if (shift == 63 && byte > 1) return std::nullopt;  // past 64 bits
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return std::nullopt;
  }

 private:
  unsigned char at_byte(std::uint64_t at) {
    if (at < start_ || at >= start_ + window_.size()) {
      start_ = at;
      window_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(kWindow, size_ - at)));
      read_(start_, window_.data(), window_.size());
    }
    return window_[static_cast<std::size_t>(at - start_)];
  }

  const ReadAt& read_;
  std::uint64_t size_;
  std::uint64_t start_ = 0;
  std::vector<unsigned char> window_;
};

void append_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// A message's framing: its fields' pieces (and the raw_data found inside), of `size` bytes.
struct Framed {
  std::vector<OnnxFraming::Piece> pieces;
  std::uint64_t size = 0;

  void file(std::uint64_t offset, std::uint64_t bytes) {
    if (bytes == 0) return;
    if (!pieces.empty() && pieces.back().bytes.empty() &&
        pieces.back().file.offset + pieces.back().file.size == offset) {
      pieces.back().file.size += bytes;  // one range for neighbouring fields
    } else {
      pieces.push_back({{offset, bytes}, {}});
    }
    size += bytes;
  }
  void header(std::string bytes) {
    size += bytes.size();
    pieces.push_back({{}, std::move(bytes)});
  }
  void add(Framed&& inner) {
    for (OnnxFraming::Piece& p : inner.pieces) {
      if (p.bytes.empty()) {
        file(p.file.offset, p.file.size);
      } else {
        header(std::move(p.bytes));
      }
    }
  }
};

// level 0 ModelProto, 1 GraphProto, 2 TensorProto: the fields of [begin, end), the graph's
// initializers' framed again without their raw_data (recorded in `raw`).
std::optional<Framed> frame(Headers& h, std::uint64_t begin, std::uint64_t end, int level,
                            std::vector<std::optional<ByteRange>>& raw) {
  Framed out;
  std::optional<ByteRange> raw_data;  // a TensorProto's last (protobuf keeps the last of a repeated singular field)
  for (std::uint64_t at = begin; at < end;) {
    const std::uint64_t field_start = at;
    const std::optional<std::uint64_t> tag = h.varint(at, end);
    if (!tag || (*tag >> 3) == 0 || (*tag >> 3) > (std::uint64_t{1} << 29)) return std::nullopt;
    const int number = static_cast<int>(*tag >> 3), type = static_cast<int>(*tag & 7);
    std::uint64_t content = at;
    switch (type) {
      case 0:
        if (!h.varint(at, end)) return std::nullopt;
        break;
      case 1:
      case 5: {
        const std::uint64_t bytes = type == 1 ? 8 : 4;
        if (end - at < bytes) return std::nullopt;
        at += bytes;
        break;
      }
      case kLengthDelimited: {
        const std::optional<std::uint64_t> length = h.varint(at, end);
        if (!length || *length > end - at) return std::nullopt;
        content = at;
        at += *length;
        break;
      }
      default: return std::nullopt;  // groups (3, 4) are deprecated; 6 and 7 do not exist
    }
    const bool descend = type == kLengthDelimited &&
                         ((level == 0 && number == kModelGraph) || (level == 1 && number == kGraphInitializer));
    if (level == 2 && type == kLengthDelimited && number == kTensorRawData) {
      raw_data = ByteRange{content, at - content};
      continue;  // left out
    }
    if (!descend) {
      out.file(field_start, at - field_start);
      continue;
    }
    std::optional<Framed> inner = frame(h, content, at, level + 1, raw);
    if (!inner) return std::nullopt;
    std::string header;
    append_varint(header, *tag);
    append_varint(header, inner->size);
    out.header(std::move(header));
    out.add(std::move(*inner));
  }
  if (level == 2) raw.push_back(raw_data);
  return out;
}

}  // namespace

std::optional<OnnxFraming> frame_onnx(const ReadAt& read, std::uint64_t size) {
  Headers h(read, size);
  OnnxFraming framing;
  std::optional<Framed> model = frame(h, 0, size, 0, framing.raw_data);
  if (!model) return std::nullopt;
  framing.pieces = std::move(model->pieces);
  framing.size = model->size;
  return framing;
}

}  // namespace infer::onnx_import

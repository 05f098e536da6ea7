// Internal to the ONNX import (read_onnx): the file's protobuf framing, read from the field headers
// alone, to find where each initializer's raw_data lies. protobuf then parses the rest (nodes,
// shapes, names: kilobytes) and the weights are read from the file straight into their layers'
// memory, where parsing them too would first copy every weight into a protobuf string (most of an
// import's time: the kernel mapping those strings' pages).
//
// The wire format (protobuf's encoding): each field is a varint tag (field number << 3 | wire type),
// then a varint (type 0), 8 bytes (1), a varint length and that many bytes (2), or 4 bytes (5).
// ModelProto's field 7 is its graph; GraphProto's field 5 an initializer; TensorProto's field 9
// its raw_data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace infer::onnx_import {

struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// The file less the initializers' raw_data, as pieces to parse in order: ranges of the file, and the
// new headers (tag and length) of the messages that lost bytes. And where each initializer's
// raw_data was, in the order protobuf lists the initializers (none for one without).
struct OnnxFraming {
  struct Piece {
    ByteRange file;     // when `bytes` is empty
    std::string bytes;  // a rewritten header
  };
  std::vector<Piece> pieces;
  std::vector<std::optional<ByteRange>> raw_data;
  std::uint64_t size = 0;  // of what the pieces make
};

// Reads `size` bytes at `offset` of the file into `out`; throws where the file cannot give them.
using ReadAt = std::function<void(std::uint64_t offset, void* out, std::size_t size)>;

// The framing of a file of `size` bytes, or nothing where it is not what this reads (a length past
// its message's end, a deprecated group, a varint of more than 10 bytes...): the caller then parses
// the file whole, and protobuf says what is wrong with it.
std::optional<OnnxFraming> frame_onnx(const ReadAt& read, std::uint64_t size);

}  // namespace infer::onnx_import

// ONNX import: an ONNX model file (a serialized onnx.ModelProto, as torch.onnx.export writes it)
// read into the network's layers, with the parameters from its initializers. Parsed with classes
// that protoc generates at build time from ONNX's schema (Debian's libonnx-dev ships onnx.proto),
// on protobuf's lite runtime. A build without protobuf (the Windows build: Debian packages none
// for mingw-w64) has no_onnx.cpp instead: it recognises an ONNX file and refuses it, saying so.
//
// What is read (docs/model-format.md, "ONNX models"):
//   opsets 1 to 17 of the default domain (17: the newest of ONNX 1.12, Debian 12's); one graph input, [N, C, H, W] or
//   [N, features], N free; one graph output, written by the last node that computes; float32 initializers stored in the
//   file (not external data);
//   the ops onnx_ops() lists (the reader table in onnx_ops.cpp), each within the limits the
//   docs state (symmetric pads, Gemm as a linear layer, softmax over the channels, ...).
// Anything else is refused naming the node and its op type.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "graph/network.h"

namespace infer {

inline constexpr long long kOnnxMinOpset = 1;
inline constexpr long long kOnnxMaxOpset = 17;

// Whether a file's first bytes are those of an ONNX model rather than text: a ModelProto starts
// with a protobuf field tag, in practice ir_version's (0x08), a control character no TOML file
// starts with. Field 1 (ir_version) as a varint: tag byte 0x08; text (TOML) starts with a printable
// character, whitespace, '#' or a byte-order mark.
inline bool looks_like_onnx(const unsigned char* bytes, std::size_t size) {
  return size >= 2 && bytes[0] == 0x08 && bytes[1] < 0x80;
}

// The ONNX op types the import reads, in its table's order; elementwise: the op computes each
// element from the same element of its one input (any shape gives the same values).
struct OnnxOp {
  std::string type;
  bool elementwise = false;
};
std::vector<OnnxOp> onnx_ops();

struct OnnxModel {
  std::string name;           // the graph's name (or "onnx-model")
  Dims input;                 // per sample: C x H x W, or features x 1 x 1
  std::vector<Layer> layers;  // with parameters and named inputs; for Network's constructor
  long long opset = 0;
};

// Reads and converts the file. Throws InputError(path, problem): not an ONNX model, an opset out of
// range, an unsupported node ("node 'Conv_12' (ConvTranspose): ..."), an attribute or a tensor the
// import cannot map, a graph with another number of inputs or outputs.
OnnxModel read_onnx(const std::filesystem::path& path);

}  // namespace infer

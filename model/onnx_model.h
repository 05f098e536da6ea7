// ONNX import: an ONNX model file (a serialized onnx.ModelProto, as torch.onnx.export writes it)
// read into the network's layers, with the parameters from its initializers. Parsed with classes
// that protoc generates at build time from ONNX's schema (Debian's libonnx-dev ships onnx.proto),
// on protobuf's lite runtime.
//
// What is read (README, "ONNX models"):
//   opsets 1 to 17 of the default domain (17: the newest of ONNX 1.12, Debian 12's); one graph input, [N, C, H, W] or [N, features], N free;
//   one graph output, written by the last node that computes; float32 initializers stored in the
//   file (not external data);
//   Conv (symmetric pads, auto_pad NOTSET or VALID), BatchNormalization (inference), Relu, Clip,
//   Sigmoid, HardSigmoid, HardSwish, Add and Mul of two computed tensors (Mul's second may be one
//   value per channel), Concat along the channels, MaxPool and AveragePool (symmetric pads,
//   ceil_mode 0 or 1), GlobalAveragePool, Flatten (axis 1), Reshape to [N, features], Gemm (a linear
//   layer: alpha = beta = 1, transA = 0), Softmax over the channels, and Dropout, Identity and
//   Constant (folded away).
// Anything else is refused naming the node and its op type.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "network.h"

namespace infer {

inline constexpr long long kOnnxMinOpset = 1;
inline constexpr long long kOnnxMaxOpset = 17;

// Whether a file's first bytes are those of an ONNX model rather than text: a ModelProto starts
// with a protobuf field tag, in practice ir_version's (0x08), a control character no TOML file
// starts with.
bool looks_like_onnx(const unsigned char* bytes, std::size_t size);

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

// The one list of layer ops. The enum LayerKind, the model file's names and the op count are all
// generated from INFER_OPS, so an op is named in one place; every switch over LayerKind is then a
// build error until it handles the new kind (-Werror=switch). docs/adding-an-op.md lists the rest.
//
// A row: X(Kind, "name in the model file", inputs): inputs is One, Two or Many (two or more), the
// number of layers the op reads. The order is the enum's order, and part of the GPU
// plugin's ABI (kOpsHash in gpu_plugin.h covers it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#define INFER_OPS(X)                            \
  X(Conv2d, "conv2d", One)                 \
  X(BatchNorm, "batchnorm", One)           \
  X(Relu, "relu", One)                     \
  X(MaxPool, "maxpool", One)               \
  X(AvgPool, "avgpool", One)               \
  X(GlobalAvgPool, "global_avgpool", One)  \
  X(Flatten, "flatten", One)               \
  X(Linear, "linear", One)                 \
  X(Softmax, "softmax", One)               \
  X(Add, "add", Two)                       \
  X(Mul, "mul", Two)                       \
  X(Concat, "concat", Many)                \
  X(Sigmoid, "sigmoid", One)               \
  X(Clip, "clip", One)                     \
  X(HardSigmoid, "hardsigmoid", One)       \
  X(HardSwish, "hardswish", One)           \
  X(Silu, "silu", One)

namespace infer {

#define INFER_OP_ENUM(kind, name, inputs) kind,
enum class LayerKind : std::uint8_t { INFER_OPS(INFER_OP_ENUM) };
#undef INFER_OP_ENUM

#define INFER_OP_ONE(kind, name, inputs) +1
inline constexpr std::size_t kOpCount = 0 INFER_OPS(INFER_OP_ONE);
#undef INFER_OP_ONE

// The model file's spelling of each op, indexed by LayerKind.
#define INFER_OP_NAME(kind, name, inputs) std::string_view(name),
inline constexpr std::array<std::string_view, kOpCount> kOpNames{INFER_OPS(INFER_OP_NAME)};
#undef INFER_OP_NAME

// Every kind, in enum order: for loops over all ops (the parser, tests that must cover each).
#define INFER_OP_KIND(kind, name, inputs) LayerKind::kind,
inline constexpr std::array<LayerKind, kOpCount> kAllOps{INFER_OPS(INFER_OP_KIND)};
#undef INFER_OP_KIND

constexpr std::string_view op_name(LayerKind k) { return kOpNames[static_cast<std::size_t>(k)]; }

// How many inputs an op reads (the graph's edges into it).
enum class Arity : std::uint8_t { One, Two, Many };
#define INFER_OP_ARITY(kind, name, inputs) Arity::inputs,
inline constexpr std::array<Arity, kOpCount> kOpArity{INFER_OPS(INFER_OP_ARITY)};
#undef INFER_OP_ARITY
constexpr Arity op_arity(LayerKind k) { return kOpArity[static_cast<std::size_t>(k)]; }

// FNV-1a over the names in order: changes whenever an op is added, removed, renamed or moved, so
// that a GPU plugin built from another op list is refused (gpu_plugin.h).
constexpr std::uint64_t ops_hash() {
  std::uint64_t h = 14695981039346656037ull;
  for (std::string_view name : kOpNames) {
    for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;  // a separator: "ab","c" and "a","bc" differ
  }
  return h;
}

namespace detail {
constexpr bool names_unique() {
  for (std::size_t i = 0; i < kOpCount; ++i) {
    for (std::size_t j = i + 1; j < kOpCount; ++j) {
      if (kOpNames[i] == kOpNames[j]) return false;
    }
  }
  return true;
}
}  // namespace detail
static_assert(detail::names_unique(), "two ops in INFER_OPS have the same name");

}  // namespace infer

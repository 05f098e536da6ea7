// The one list of layer ops. The enum LayerKind, the model file's names and the op count are all
// generated from INFER_OPS, so an op is named in one place; every switch over LayerKind is then a
// build error until it handles the new kind (-Werror=switch). docs/adding-an-op.md lists the rest.
//
// A row of INFER_GRAPH_OPS: X(Kind, "name in the model file", inputs): inputs is One, Two or Many
// (two or more), the number of layers the op reads.
//
// INFER_POINTWISE_OPS (graph/pointwise_op.h, with the rows' format) lists the elementwise ops of
// one input, y = f(x; a, b), defined once in graph/pointwise_formula.h for both backends. Every
// switch over LayerKind lists the pointwise kinds with INFER_CASE_POINTWISE_OPS (one generic case
// each), so a new pointwise op is a row there and a formula in pointwise_formula.h.
//
// The order is the enum's order, and part of the GPU plugin's ABI (kOpsHash in gpu_plugin.h covers
// it); the pointwise ops come last, and their order is the GPU kernel's op code.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "graph/pointwise_op.h"

#define INFER_GRAPH_OPS(X)                    \
  X(Conv2d, "conv2d", One)                    \
  X(BatchNorm, "batchnorm", One)              \
  X(Relu, "relu", One)                        \
  X(MaxPool, "maxpool", One)                  \
  X(AvgPool, "avgpool", One)                  \
  X(GlobalAvgPool, "global_avgpool", One)     \
  X(Flatten, "flatten", One)                  \
  X(Linear, "linear", One)                    \
  X(Softmax, "softmax", One)                  \
  X(Add, "add", Two)                          \
  X(Mul, "mul", Two)                          \
  X(Concat, "concat", Many)                   \
  X(Upsample, "upsample", One)                \
  X(Pad, "pad", One)                          \
  X(AdaptiveAvgPool, "adaptive_avgpool", One) \
  X(ChannelShuffle, "channel_shuffle", One)   \
  X(ChannelSlice, "channel_slice", One)       \
  X(Resize, "resize", One)                    \
  X(LayerNorm, "layernorm", One)

// Every op, as rows X(Kind, "name", inputs).
#define INFER_POINTWISE_AS_OP(X, kind, name, key_a, a, key_b, b, rule) X(kind, name, One)
#define INFER_OPS(X) INFER_GRAPH_OPS(X) INFER_POINTWISE_OPS(INFER_POINTWISE_AS_OP, X)

// The case labels of every pointwise kind, for a switch over LayerKind:
//   INFER_CASE_POINTWISE_OPS return in;
#define INFER_POINTWISE_CASE(X, kind, name, key_a, a, key_b, b, rule) case ::infer::LayerKind::kind:
#define INFER_CASE_POINTWISE_OPS INFER_POINTWISE_OPS(INFER_POINTWISE_CASE, _)

// The case labels of every kind without parameters (LayerParams, network.h: all but Conv2d,
// BatchNorm and Linear), for a switch over LayerKind that handles those three and does one thing
// for the rest. Listed, not defaulted, so that a new kind is a build error until it has a place:
//   INFER_CASE_PARAMETERLESS_OPS return {};
#define INFER_CASE_PARAMETERLESS_OPS        \
  case ::infer::LayerKind::Relu:            \
  case ::infer::LayerKind::MaxPool:         \
  case ::infer::LayerKind::AvgPool:         \
  case ::infer::LayerKind::GlobalAvgPool:   \
  case ::infer::LayerKind::Flatten:         \
  case ::infer::LayerKind::Softmax:         \
  case ::infer::LayerKind::Add:             \
  case ::infer::LayerKind::Mul:             \
  case ::infer::LayerKind::Concat:          \
  case ::infer::LayerKind::Upsample:        \
  case ::infer::LayerKind::Pad:             \
  case ::infer::LayerKind::AdaptiveAvgPool: \
  case ::infer::LayerKind::ChannelShuffle:  \
  case ::infer::LayerKind::ChannelSlice:    \
  case ::infer::LayerKind::Resize: INFER_CASE_POINTWISE_OPS

namespace infer {

// A pointwise parameter's default that makes its key required (INFER_POINTWISE_OPS).
inline constexpr float kRequiredValue = std::numeric_limits<float>::quiet_NaN();

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

#define INFER_POINTWISE_ONE(X, kind, name, key_a, a, key_b, b, rule) +1
inline constexpr std::size_t kPointwiseCount = 0 INFER_POINTWISE_OPS(INFER_POINTWISE_ONE, _);
#undef INFER_POINTWISE_ONE
inline constexpr std::size_t kFirstPointwise = kOpCount - kPointwiseCount;

constexpr bool is_pointwise(LayerKind k) { return static_cast<std::size_t>(k) >= kFirstPointwise; }
// The pointwise op of a kind for which is_pointwise() holds.
constexpr PointwiseOp pointwise_op(LayerKind k) {
  return static_cast<PointwiseOp>(static_cast<std::size_t>(k) - kFirstPointwise);
}
constexpr LayerKind layer_kind(PointwiseOp op) {
  return static_cast<LayerKind>(kFirstPointwise + static_cast<std::size_t>(op));
}

// A pointwise op's two parameters as the model file gives them, and the rule their values follow.
enum class PointwiseRule : std::uint8_t { Any, Finite, Ordered };
struct PointwiseKeys {
  std::string_view key_a;  // empty: a is fixed at default_a
  float default_a;         // kRequiredValue: the key must be given
  std::string_view key_b;
  float default_b;
  PointwiseRule rule;
};
#define INFER_POINTWISE_KEYS(X, kind, name, key_a, a, key_b, b, rule) \
  PointwiseKeys{key_a, a, key_b, b, PointwiseRule::rule},
inline constexpr std::array<PointwiseKeys, kPointwiseCount> kPointwiseKeys{
    INFER_POINTWISE_OPS(INFER_POINTWISE_KEYS, _)};
#undef INFER_POINTWISE_KEYS
constexpr const PointwiseKeys& pointwise_keys(PointwiseOp op) { return kPointwiseKeys[static_cast<std::size_t>(op)]; }

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

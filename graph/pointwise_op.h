// The pointwise ops' list (INFER_POINTWISE_OPS) and their enum, apart from the rest of ops.h so
// that device code compiles them without the standard library: the GPU kernels include this
// header through graph/pointwise_formula.h, and NVRTC (the CUDA 12 backend's kernels,
// backends/cudnn/kernels/) has no standard headers. Plain preprocessor and C++ only.
//
// A row of INFER_POINTWISE_OPS: an elementwise op of one input, y = f(x; a, b), defined once in
// graph/pointwise_formula.h for both backends. The row: P(X, Kind, "name", "key of a", default a,
// "key of b", default b, rule): the model file's keys for the two parameters (an empty key is a
// fixed value, not read; a default of kRequiredValue, ops.h, makes the key required), and the rule
// the values follow: Any, Finite (both finite) or Ordered (a <= b, either may be infinite: clip's
// bounds). ops.h turns the rows into layer kinds, names and keys.
#pragma once

#define INFER_POINTWISE_OPS(P, X)                                                             \
  P(X, Sigmoid, "sigmoid", "", 0.0f, "", 0.0f, Any)                                           \
  P(X, Clip, "clip", "min", ::infer::kRequiredValue, "max", ::infer::kRequiredValue, Ordered) \
  P(X, HardSigmoid, "hardsigmoid", "alpha", 1.0f / 6.0f, "beta", 0.5f, Finite)                \
  P(X, HardSwish, "hardswish", "", 1.0f / 6.0f, "", 0.5f, Any)                                \
  P(X, Silu, "silu", "", 0.0f, "", 0.0f, Any)                                                 \
  P(X, LeakyRelu, "leaky_relu", "alpha", 0.01f, "", 0.0f, Finite)                             \
  P(X, Gelu, "gelu", "", 0.0f, "", 0.0f, Any)

namespace infer {

// The pointwise ops, in their rows' order (the GPU kernel's op code is the value).
#define INFER_POINTWISE_ENUM(X, kind, name, key_a, a, key_b, b, rule) kind,
enum class PointwiseOp : int { INFER_POINTWISE_OPS(INFER_POINTWISE_ENUM, _) };
#undef INFER_POINTWISE_ENUM

}  // namespace infer

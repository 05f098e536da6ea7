// IEEE 754 binary16 ("half") conversion on the host, for uploading fp16 weights once. Header only,
// no CUDA: tested on every machine (tests/backends/cudnn/test_half.cpp, exhaustively over all 65536 halves).
//
// float_to_half rounds to nearest, ties to even (as __float2half_rn), including into and out of
// the subnormal range; values from 65520 up (the midpoint above the largest half, 65504) become
// infinity; NaN stays a (quiet) NaN with its sign.
#pragma once

#include <cstdint>
#include <cstring>

namespace infer::cudnn {

inline std::uint16_t float_to_half(float value) {
  std::uint32_t x = 0;
  std::memcpy(&x, &value, sizeof x);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return static_cast<std::uint16_t>(sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (mag >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: infinity
  std::uint32_t result = 0;
  std::uint32_t rest = 0;  // the bits shifted out
  std::uint32_t halfway = 0;
  if (mag >= 0x38800000u) {  // >= 2^-14: normal; re-bias the exponent (127 -> 15), drop 13 bits
    result = (mag - 0x38000000u) >> 13;
    rest = mag & 0x1fffu;
    halfway = 0x1000u;
  } else {
    const std::uint32_t exponent = mag >> 23;  // < 113
    if (exponent < 102) return sign;           // below 2^-25, the midpoint under the smallest subnormal
    // The value in units of 2^-24 (the subnormal step) is significand * 2^(exponent - 126).
    const std::uint32_t significand = (mag & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // 14..24
    result = significand >> shift;
    rest = significand & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1);
  }
  // A carry out of the mantissa correctly moves to the next exponent (or from subnormal to normal).
  if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
  return static_cast<std::uint16_t>(sign | result);
}

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  std::uint32_t x = 0;
  if (exponent == 0x1f) {
    x = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    x = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    x = sign;
  } else {  // subnormal: normalise
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    x = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f = 0.0f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace infer::cudnn

// IEEE 754 binary16 ("half") <-> binary32/binary64 conversions for the CPU stand-in (test
// infrastructure). Written from the IEEE 754-2008 definition of binary16: 1 sign bit, 5 exponent
// bits (bias 15), 10 fraction bits; exponent 0 holds zero and the subnormals (fraction * 2^-24),
// exponent 31 holds infinity (fraction 0) and NaN (fraction != 0).
//
// Rounding is to nearest, ties to even, including into and out of the subnormal range; values at
// or beyond 65520 round to infinity; NaN stays NaN (quiet, sign and the top payload bits kept).
// Converting from double directly (instead of double -> float -> half) avoids double rounding.
#pragma once

#include <cstdint>
#include <cstring>

namespace standin {

inline std::uint16_t half_from_double(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  const auto sign = static_cast<std::uint16_t>((bits >> 48) & 0x8000u);
  const auto exponent = static_cast<int>((bits >> 52) & 0x7FFu);
  const std::uint64_t fraction = bits & ((std::uint64_t{1} << 52) - 1);
  if (exponent == 0x7FF) {
    if (fraction == 0) return static_cast<std::uint16_t>(sign | 0x7C00u);
    return static_cast<std::uint16_t>(sign | 0x7E00u | static_cast<std::uint16_t>((fraction >> 42) & 0x3FFu));
  }
  if (exponent == 0) return sign;  // zero or a double subnormal: far below half's smallest subnormal
  const int e = exponent - 1023;   // value = 1.fraction * 2^e
  if (e > 15) return static_cast<std::uint16_t>(sign | 0x7C00u);
  const std::uint64_t mantissa = fraction | (std::uint64_t{1} << 52);  // 53 significant bits
  // Normal results keep 11 significant bits (value in units of 2^(e-10)); subnormal results are
  // counted in units of 2^-24. Either way: drop `shift` low bits with round-to-nearest-even.
  const int shift = e >= -14 ? 42 : 28 - e;
  if (shift >= 64) return sign;
  std::uint64_t kept = mantissa >> shift;
  const std::uint64_t rest = mantissa & ((std::uint64_t{1} << shift) - 1);
  const std::uint64_t halfway = std::uint64_t{1} << (shift - 1);
  if (rest > halfway || (rest == halfway && (kept & 1u) != 0)) ++kept;
  if (e < -14) {
    // kept <= 0x400; 0x400 is exactly the smallest normal's bit pattern.
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(kept));
  }
  int biased = e + 15;
  if (kept == (std::uint64_t{1} << 11)) {  // rounding carried into the next binade
    kept >>= 1;
    ++biased;
  }
  if (biased >= 31) return static_cast<std::uint16_t>(sign | 0x7C00u);
  return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(biased << 10) |
                                    static_cast<std::uint16_t>(kept & 0x3FFu));
}

inline std::uint16_t half_from_float(float value) { return half_from_double(static_cast<double>(value)); }

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t fraction = h & 0x3FFu;
  std::uint32_t bits = 0;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (fraction << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (fraction << 13);  // 112 = 127 - 15
  } else if (fraction == 0) {
    bits = sign;
  } else {
    // Subnormal: fraction * 2^-24, normalised for binary32.
    int e = -14;
    while ((fraction & 0x400u) == 0) {
      fraction <<= 1;
      --e;
    }
    bits = sign | (static_cast<std::uint32_t>(e + 127) << 23) | ((fraction & 0x3FFu) << 13);
  }
  float out = 0.0f;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

}  // namespace standin

// backends/cudnn/half.h, the host float -> half conversion of the fp16 weights: exhaustively over all
// 65536 halves (round trips, and every midpoint between neighbours rounds to the even one), plus
// the edges (overflow at 65520, the subnormal range, signed zero, NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "backends/cudnn/half.h"

namespace infer::test {
namespace {

using cudnn::float_to_half;
using cudnn::half_to_float;

bool is_nan_half(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

TEST(Half, EveryHalfRoundTripsAndEveryMidpointRoundsToEven) {
  int checked_midpoints = 0;
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    if (is_nan_half(bits)) continue;
    const float f = half_to_float(bits);
    ASSERT_EQ(float_to_half(f), bits) << std::hex << h;
    // The midpoint to the next half of larger magnitude (exact in float: halves have 11 bits).
    const std::uint16_t next = static_cast<std::uint16_t>(bits + 1);
    if ((bits & 0x7fffu) >= 0x7bffu) continue;  // the largest finite half and infinity have no finite successor
    const double mid = (static_cast<double>(f) + static_cast<double>(half_to_float(next))) / 2.0;
    ASSERT_EQ(static_cast<double>(static_cast<float>(mid)), mid);
    const std::uint16_t even = (bits & 1u) ? next : bits;
    ASSERT_EQ(float_to_half(static_cast<float>(mid)), even) << std::hex << h;
    // Just off the midpoint rounds to the nearer one.
    ASSERT_EQ(float_to_half(std::nextafter(static_cast<float>(mid), 0.0f)), bits) << std::hex << h;
    ASSERT_EQ(float_to_half(std::nextafter(static_cast<float>(mid), std::copysign(1e9f, f))), next) << std::hex << h;
    ++checked_midpoints;
  }
  EXPECT_GT(checked_midpoints, 60000);
}

TEST(Half, Edges) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00u);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000u);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bffu);
  EXPECT_EQ(float_to_half(65519.996f), 0x7bffu);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00u);  // the midpoint to 2^16 rounds to even: infinity
  EXPECT_EQ(float_to_half(1e30f), 0x7c00u);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::infinity()), 0xfc00u);
  EXPECT_TRUE(is_nan_half(float_to_half(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000u);  // its midpoint to 0: even
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001u);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400u);     // smallest normal
  EXPECT_EQ(float_to_half(std::ldexp(1023.5f, -24)), 0x0400u);  // carries from subnormal to normal
  EXPECT_EQ(float_to_half(-0.0f), 0x8000u);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00u);      // tie: even
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02u);  // tie: even (up)
  EXPECT_EQ(half_to_float(0x0001u), std::ldexp(1.0f, -24));
}

}  // namespace
}  // namespace infer::test

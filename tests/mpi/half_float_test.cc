// float16/bfloat16 conversions checked against the compiler's own _Float16 and an
// exact bfloat16 reference, over every 16-bit pattern and many float32 values.
#include "mpi_ops/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace horde {
namespace {

uint16_t ReferenceFloat16Bits(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

float ReferenceFloat16ToFloat(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof(bits));
  return static_cast<float>(h);
}

// Round to nearest even, computed in double from the exact float value.
uint16_t ReferenceBFloat16Bits(float f) {
  uint32_t bits = FloatToBits(f);
  uint32_t truncated = bits & 0xffff0000u;
  uint32_t next = truncated + 0x10000u;
  double low = BitsToFloat(truncated);
  // The step past the largest finite value is 2^128, which float cannot hold.
  double high = (next & 0x7fffffffu) == 0x7f800000u ? std::copysign(std::ldexp(1.0, 128), f)
                                                    : double(BitsToFloat(next));
  double distance_low = std::fabs(double(f) - low), distance_high = std::fabs(high - double(f));
  bool round_up = distance_high < distance_low ||
                  (distance_high == distance_low && ((truncated >> 16) & 1u));
  return static_cast<uint16_t>((round_up ? next : truncated) >> 16);
}

TEST(HalfFloat, EveryFloat16PatternConvertsToFloatAndBack) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    float expected = ReferenceFloat16ToFloat(static_cast<uint16_t>(bits));
    float got = Float16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << bits;
      continue;
    }
    ASSERT_EQ(FloatToBits(got), FloatToBits(expected)) << "pattern " << bits;
    ASSERT_EQ(FloatToFloat16(got), bits) << "round trip of pattern " << bits;
  }
}

TEST(HalfFloat, FloatToFloat16RoundsLikeTheCompiler) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 2000000; ++i) {
    float f = BitsToFloat(any_bits(rng));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToFloat16(f), ReferenceFloat16Bits(f)) << "value " << f;
  }
  for (float f : {65504.f, 65519.f, 65520.f, 1e-8f, -2.98e-8f, 6.1e-5f, 0.f, -0.f}) {
    EXPECT_EQ(FloatToFloat16(f), ReferenceFloat16Bits(f)) << "value " << f;
  }
}

TEST(HalfFloat, BFloat16RoundsToNearestEven) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any_bits;
  for (int i = 0; i < 2000000; ++i) {
    float f = BitsToFloat(any_bits(rng));
    if (std::isnan(f) || std::isinf(f)) continue;
    ASSERT_EQ(FloatToBFloat16(f), ReferenceBFloat16Bits(f)) << "value " << f;
  }
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.5f)), 1.5f);
}

}  // namespace
}  // namespace horde

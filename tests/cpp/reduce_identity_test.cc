// The identity a joined rank contributes, for every dtype and reduce op: reducing it
// with any value gives that value back.
#include "core/reduce_identity.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

namespace horde {
namespace {

template <typename T>
T ValueOf(const IdentityElement& identity) {
  EXPECT_EQ(identity.size, static_cast<int64_t>(sizeof(T)));
  T value;
  std::memcpy(&value, identity.bytes.data(), sizeof(T));
  return value;
}

template <typename T>
void ExpectNumericIdentities(DataType dtype) {
  using Limits = std::numeric_limits<T>;
  const T largest = Limits::has_infinity ? Limits::infinity() : Limits::max();
  const T lowest = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
  EXPECT_EQ(ValueOf<T>(IdentityOf(dtype, ReduceOp::kSum)), T(0)) << DataTypeName(dtype);
  EXPECT_EQ(ValueOf<T>(IdentityOf(dtype, ReduceOp::kAverage)), T(0)) << DataTypeName(dtype);
  EXPECT_EQ(ValueOf<T>(IdentityOf(dtype, ReduceOp::kProduct)), T(1)) << DataTypeName(dtype);
  EXPECT_EQ(ValueOf<T>(IdentityOf(dtype, ReduceOp::kMin)), largest) << DataTypeName(dtype);
  EXPECT_EQ(ValueOf<T>(IdentityOf(dtype, ReduceOp::kMax)), lowest) << DataTypeName(dtype);
}

TEST(ReduceIdentity, IntegerAndFloatTypes) {
  ExpectNumericIdentities<uint8_t>(DataType::kUInt8);
  ExpectNumericIdentities<int8_t>(DataType::kInt8);
  ExpectNumericIdentities<int16_t>(DataType::kInt16);
  ExpectNumericIdentities<int32_t>(DataType::kInt32);
  ExpectNumericIdentities<int64_t>(DataType::kInt64);
  ExpectNumericIdentities<float>(DataType::kFloat32);
  ExpectNumericIdentities<double>(DataType::kFloat64);
}

TEST(ReduceIdentity, HalfTypesByTheirBits) {
  // float16: 1.0 = 0x3C00, inf = 0x7C00; bfloat16: 1.0 = 0x3F80, inf = 0x7F80.
  for (auto [dtype, one, inf] :
       {std::tuple<DataType, uint16_t, uint16_t>{DataType::kFloat16, 0x3C00, 0x7C00},
        {DataType::kBFloat16, 0x3F80, 0x7F80}}) {
    EXPECT_EQ(ValueOf<uint16_t>(IdentityOf(dtype, ReduceOp::kSum)), 0);
    EXPECT_EQ(ValueOf<uint16_t>(IdentityOf(dtype, ReduceOp::kProduct)), one);
    EXPECT_EQ(ValueOf<uint16_t>(IdentityOf(dtype, ReduceOp::kMin)), inf);
    EXPECT_EQ(ValueOf<uint16_t>(IdentityOf(dtype, ReduceOp::kMax)), inf | 0x8000);
  }
}

TEST(ReduceIdentity, BoolIsNeutralForOrAndAnd) {
  EXPECT_EQ(ValueOf<uint8_t>(IdentityOf(DataType::kBool, ReduceOp::kSum)), 0);      // or
  EXPECT_EQ(ValueOf<uint8_t>(IdentityOf(DataType::kBool, ReduceOp::kMax)), 0);      // or
  EXPECT_EQ(ValueOf<uint8_t>(IdentityOf(DataType::kBool, ReduceOp::kMin)), 1);      // and
  EXPECT_EQ(ValueOf<uint8_t>(IdentityOf(DataType::kBool, ReduceOp::kProduct)), 1);  // and
}

TEST(ReduceIdentity, FillsHostMemory) {
  std::vector<int32_t> values(5, 7);
  FillHost(values.data(), 5, IdentityOf(DataType::kInt32, ReduceOp::kMin));
  EXPECT_EQ(values, std::vector<int32_t>(5, std::numeric_limits<int32_t>::max()));
  FillHost(values.data(), 5, IdentityOf(DataType::kInt32, ReduceOp::kSum));
  EXPECT_EQ(values, std::vector<int32_t>(5, 0));
  EXPECT_TRUE(IdentityOf(DataType::kInt32, ReduceOp::kSum).zero());
  EXPECT_FALSE(IdentityOf(DataType::kInt32, ReduceOp::kProduct).zero());
}

}  // namespace
}  // namespace horde

// Scaling of reduced host buffers: an integer Average is (sum / size) truncated toward
// zero for every world size (not sum * (1/size), which gives 0 for ones on 49 ranks),
// prescale and postscale truncate like torch's cast, and a scaled value outside the
// dtype's range is clamped rather than converted with undefined behaviour.
#include "mpi_ops/host_scale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace horde {
namespace {

Response Average(double postscale = 1.0) {
  Response response;
  response.reduce_op = ReduceOp::kAverage;
  response.dtype = DataType::kInt64;
  response.postscale = postscale;
  return response;
}

// What torch computes for an integer Average: the exact quotient, truncated toward zero.
int64_t TruncatingQuotient(int64_t sum, int64_t size) { return sum / size; }

// `exact` truncated into T, or T's nearest bound where it does not fit (0 for NaN).
template <typename T>
T Reference(double exact) {
  using Limits = std::numeric_limits<T>;
  if (std::isnan(exact)) return 0;
  if (exact >= static_cast<double>(Limits::max())) return Limits::max();
  if (exact <= static_cast<double>(Limits::lowest())) return Limits::lowest();
  return static_cast<T>(std::trunc(exact));
}

// The sums an allreduce of `size` ranks can produce: every rank's ones, and values of
// both signs around multiples of the size.
std::vector<int64_t> SumsFor(int64_t size, int64_t lowest, int64_t highest) {
  std::vector<int64_t> sums;
  for (int64_t multiple : {-3, -1, 0, 1, 2, 7}) {
    for (int64_t offset : {-1, 0, 1}) {
      const int64_t sum = multiple * size + offset;
      if (sum >= lowest && sum <= highest) sums.push_back(sum);
    }
  }
  return sums;
}

template <typename T>
void ExpectExactAverages(DataType dtype, double postscale) {
  using Limits = std::numeric_limits<T>;
  for (int64_t size = 1; size <= 1024; ++size) {
    const std::vector<int64_t> sums = SumsFor(size, Limits::lowest(), Limits::max());
    std::vector<T> values(sums.begin(), sums.end());
    Response response = Average(postscale);
    response.dtype = dtype;
    PostscaleHostBuffer(values.data(), static_cast<int64_t>(values.size()), dtype,
                        PostscaleOf(response, static_cast<int>(size)));
    for (size_t i = 0; i < sums.size(); ++i) {
      const T expected = Reference<T>(static_cast<double>(TruncatingQuotient(sums[i], size)) *
                                      postscale);
      ASSERT_EQ(values[i], expected) << DataTypeName(dtype) << ": sum " << sums[i] << " over "
                                     << size << " ranks, postscale " << postscale;
    }
  }
}

TEST(HostScale, IntegerAverageIsTheTruncatedQuotientForEverySize) {
  for (double postscale : {1.0, 3.0, 0.5}) {
    ExpectExactAverages<uint8_t>(DataType::kUInt8, postscale);
    ExpectExactAverages<int8_t>(DataType::kInt8, postscale);
    ExpectExactAverages<int16_t>(DataType::kInt16, postscale);
    ExpectExactAverages<int32_t>(DataType::kInt32, postscale);
    ExpectExactAverages<int64_t>(DataType::kInt64, postscale);
  }
}

TEST(HostScale, OnesOn49RanksAverageToOne) {
  std::vector<int64_t> sum(3, 49);
  PostscaleHostBuffer(sum.data(), 3, DataType::kInt64, PostscaleOf(Average(), 49));
  EXPECT_EQ(sum, std::vector<int64_t>(3, 1));
}

TEST(HostScale, IntegerPrescaleTruncatesTowardZero) {
  std::vector<int32_t> values = {7, -7, 1, -1, 0};
  ScaleHostBuffer(values.data(), 5, DataType::kInt32, 0.5);
  EXPECT_EQ(values, (std::vector<int32_t>{3, -3, 0, 0, 0}));
  ScaleHostBuffer(values.data(), 5, DataType::kInt32, 3);
  EXPECT_EQ(values, (std::vector<int32_t>{9, -9, 0, 0, 0}));
}

template <typename T>
void ExpectClamped(DataType dtype) {
  using Limits = std::numeric_limits<T>;
  const double inf = std::numeric_limits<double>::infinity();
  for (double factor : {2.0, 1e30, inf, -2.0, -1e30, -inf, std::nan("")}) {
    std::vector<T> values = {Limits::max(), Limits::lowest(), 1, 0};
    ScaleHostBuffer(values.data(), 4, dtype, factor);
    for (size_t i = 0; i < values.size(); ++i) {
      const T original = std::vector<T>{Limits::max(), Limits::lowest(), 1, 0}[i];
      const T expected = Reference<T>(static_cast<double>(original) * factor);
      EXPECT_EQ(values[i], expected) << DataTypeName(dtype) << " " << +original << " * " << factor;
    }
  }
  // A postscale factor past the range clamps too.
  std::vector<T> big = {Limits::max()};
  Response response = Average(4.0);
  PostscaleHostBuffer(big.data(), 1, dtype, PostscaleOf(response, 1));
  EXPECT_EQ(big[0], Limits::max());
}

TEST(HostScale, ValuesScaledOutOfRangeAreClamped) {
  ExpectClamped<uint8_t>(DataType::kUInt8);
  ExpectClamped<int8_t>(DataType::kInt8);
  ExpectClamped<int16_t>(DataType::kInt16);
  ExpectClamped<int32_t>(DataType::kInt32);
  ExpectClamped<int64_t>(DataType::kInt64);
}

TEST(HostScale, FloatAverageDividesBySize) {
  std::vector<double> sum = {49.0, -98.0};
  Response response = Average();
  response.dtype = DataType::kFloat64;
  PostscaleHostBuffer(sum.data(), 2, DataType::kFloat64, PostscaleOf(response, 49));
  EXPECT_DOUBLE_EQ(sum[0], 1.0);
  EXPECT_DOUBLE_EQ(sum[1], -2.0);
}

TEST(HostScale, SumIsOnlyPostscaled) {
  Response response;
  response.reduce_op = ReduceOp::kSum;
  response.postscale = 2.0;
  const Postscale postscale = PostscaleOf(response, 8);
  EXPECT_EQ(postscale.divisor, 1);
  std::vector<int16_t> values = {5, -5};
  PostscaleHostBuffer(values.data(), 2, DataType::kInt16, postscale);
  EXPECT_EQ(values, (std::vector<int16_t>{10, -10}));
}

}  // namespace
}  // namespace horde

#include "tests/mpi/expected_reduction.h"

#include <algorithm>
#include <cmath>

#include "tests/mpi/typed_values.h"

namespace horde {
namespace testing {
namespace {

// A scaled value as horde stores it (mpi_ops/host_scale.h): integers truncate toward
// zero and saturate at the dtype's range.
double Scaled(DataType dtype, double value) {
  if (IsFloatingPoint(dtype)) return value;
  double lowest = 0, highest = 0;
  switch (dtype) {
    case DataType::kUInt8: highest = 255; break;
    case DataType::kInt8: lowest = -128, highest = 127; break;
    case DataType::kInt16: lowest = -32768, highest = 32767; break;
    case DataType::kInt32: lowest = -2147483648.0, highest = 2147483647.0; break;
    default: lowest = -9.2233720368547758e18, highest = 9.2233720368547758e18; break;
  }
  return std::clamp(std::trunc(value), lowest, highest);
}

double ProductInput(DataType dtype, int rank, int64_t index) {
  const double magnitude = (index + rank) % 3 == 0 ? 2 : 1;
  const bool negative = dtype != DataType::kUInt8 && (index + 2 * rank) % 5 == 0;
  return negative ? -magnitude : magnitude;
}

// Two inputs combined as the reduction combines them. For bool, Sum and Max are logical
// or, Min and Product logical and (mpi_datatypes.cc): on 0 and 1, max and min.
double Combined(DataType dtype, ReduceOp op, double a, double b) {
  const bool logical = dtype == DataType::kBool;
  switch (op) {
    case ReduceOp::kMin: return std::min(a, b);
    case ReduceOp::kMax: return std::max(a, b);
    case ReduceOp::kProduct: return logical ? std::min(a, b) : a * b;
    default: return logical ? std::max(a, b) : a + b;
  }
}

}  // namespace

std::vector<ReduceOp> AllreduceOpsFor(DataType dtype) {
  std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
  if (dtype != DataType::kBool) ops.push_back(ReduceOp::kAverage);
  return ops;
}

double ReductionInput(DataType dtype, ReduceOp op, int rank, int64_t index) {
  if (dtype == DataType::kBool) return static_cast<double>((index >> rank) & 1);
  if (op == ReduceOp::kProduct) return ProductInput(dtype, rank, index);
  const int64_t mixed = (index * 7 + rank * 13) % 23;
  if (dtype == DataType::kUInt8) {
    const bool compared = op == ReduceOp::kMin || op == ReduceOp::kMax;
    return static_cast<double>(compared ? 100 + 6 * mixed : mixed);
  }
  const double half = IsFloatingPoint(dtype) && (index + rank) % 2 == 1 ? 0.5 : 0.0;
  return static_cast<double>(mixed - 11) + half;
}

double ExpectedReduction(DataType dtype, ReduceOp op, int size, int64_t index, double prescale,
                         double postscale) {
  // Folded without allocating: checks call this for every element they compare.
  double result = Scaled(dtype, ReductionInput(dtype, op, 0, index) * prescale);
  for (int r = 1; r < size; ++r)
    result = Combined(dtype, op, result,
                      Scaled(dtype, ReductionInput(dtype, op, r, index) * prescale));
  if (dtype == DataType::kBool) return result;  // never scaled
  if (op != ReduceOp::kAverage) return Scaled(dtype, result * postscale);
  if (IsFloatingPoint(dtype)) {
    // One multiplication by postscale / size: in float64 for float64, in float32 (then
    // rounded to the dtype) for the others (mpi_ops/host_scale.cc). Both operands fit
    // 24 bits, so their product in double is exact and rounds once, as float32's does.
    if (dtype == DataType::kFloat64) return result * (postscale / size);
    return static_cast<float>(result * static_cast<float>(postscale / size));
  }
  // Integer averages divide exactly, then scale (mpi_ops/postscale.h).
  return Scaled(dtype, std::trunc(result / size) * postscale);
}

double RoundedTo(DataType dtype, double value) {
  double stored[1];
  StoreElement(dtype, stored, 0, value);
  return LoadElement(dtype, stored, 0);
}

}  // namespace testing
}  // namespace horde

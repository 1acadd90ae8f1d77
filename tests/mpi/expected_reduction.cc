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

bool BoolResult(ReduceOp op, const std::vector<double>& inputs) {
  // Sum and Max are logical or, Min and Product logical and (mpi_datatypes.cc).
  const bool all = std::all_of(inputs.begin(), inputs.end(), [](double v) { return v != 0; });
  const bool any = std::any_of(inputs.begin(), inputs.end(), [](double v) { return v != 0; });
  return op == ReduceOp::kMin || op == ReduceOp::kProduct ? all : any;
}

double Reduced(ReduceOp op, const std::vector<double>& inputs) {
  double result = inputs[0];
  for (size_t r = 1; r < inputs.size(); ++r) {
    switch (op) {
      case ReduceOp::kMin: result = std::min(result, inputs[r]); break;
      case ReduceOp::kMax: result = std::max(result, inputs[r]); break;
      case ReduceOp::kProduct: result *= inputs[r]; break;
      default: result += inputs[r]; break;
    }
  }
  return result;
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
  std::vector<double> inputs;
  for (int r = 0; r < size; ++r)
    inputs.push_back(Scaled(dtype, ReductionInput(dtype, op, r, index) * prescale));
  if (dtype == DataType::kBool) return BoolResult(op, inputs) ? 1 : 0;
  double result = Reduced(op, inputs);
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

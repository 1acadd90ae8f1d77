#include "mpi_ops/host_scale.h"

#include <cmath>
#include <limits>

#include "mpi_ops/half_float.h"

namespace horde {
namespace {

// `value` truncated toward zero into T, clamped to T's range.
template <typename T>
T Clamped(double value) {
  using Limits = std::numeric_limits<T>;
  if (std::isnan(value)) return 0;
  // Both bounds are exact in double except int64's maximum, which rounds up to 2^63:
  // `>=` then still sends every value that does not fit to the maximum.
  if (value <= static_cast<double>(Limits::lowest())) return Limits::lowest();
  if (value >= static_cast<double>(Limits::max())) return Limits::max();
  return static_cast<T>(value);
}

template <typename T>
void ScaleIntegers(void* data, int64_t count, double factor) {
  auto* values = static_cast<T*>(data);
  for (int64_t i = 0; i < count; ++i)
    values[i] = Clamped<T>(static_cast<double>(values[i]) * factor);
}

template <typename T>
void DivideIntegers(void* data, int64_t count, int64_t divisor) {
  auto* values = static_cast<T*>(data);
  // In int64: the divisor (up to the world size) need not fit in T; the quotient does.
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<T>(static_cast<int64_t>(values[i]) / divisor);
}

template <typename T>
void ScaleFloats(void* data, int64_t count, double factor) {
  auto* values = static_cast<T*>(data);
  const auto f = static_cast<T>(factor);
  for (int64_t i = 0; i < count; ++i) values[i] *= f;
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void ScaleHalf(void* data, int64_t count, double factor) {
  auto* values = static_cast<uint16_t*>(data);
  const auto f = static_cast<float>(factor);
  for (int64_t i = 0; i < count; ++i) values[i] = Store(Load(values[i]) * f);
}

template <typename T>
void PostscaleIntegers(void* data, int64_t count, const Postscale& postscale) {
  if (postscale.divisor != 1) DivideIntegers<T>(data, count, postscale.divisor);
  if (postscale.factor != 1.0) ScaleIntegers<T>(data, count, postscale.factor);
}

}  // namespace

void ScaleHostBuffer(void* data, int64_t count, DataType dtype, double factor) {
  switch (dtype) {
    case DataType::kUInt8: return ScaleIntegers<uint8_t>(data, count, factor);
    case DataType::kInt8: return ScaleIntegers<int8_t>(data, count, factor);
    case DataType::kInt16: return ScaleIntegers<int16_t>(data, count, factor);
    case DataType::kInt32: return ScaleIntegers<int32_t>(data, count, factor);
    case DataType::kInt64: return ScaleIntegers<int64_t>(data, count, factor);
    case DataType::kFloat16: return ScaleHalf<Float16ToFloat, FloatToFloat16>(data, count, factor);
    case DataType::kBFloat16:
      return ScaleHalf<BFloat16ToFloat, FloatToBFloat16>(data, count, factor);
    case DataType::kFloat32: return ScaleFloats<float>(data, count, factor);
    case DataType::kFloat64: return ScaleFloats<double>(data, count, factor);
    case DataType::kBool: return;
  }
}

void PostscaleHostBuffer(void* data, int64_t count, DataType dtype, const Postscale& postscale) {
  if (postscale.identity()) return;
  switch (dtype) {
    case DataType::kUInt8: return PostscaleIntegers<uint8_t>(data, count, postscale);
    case DataType::kInt8: return PostscaleIntegers<int8_t>(data, count, postscale);
    case DataType::kInt16: return PostscaleIntegers<int16_t>(data, count, postscale);
    case DataType::kInt32: return PostscaleIntegers<int32_t>(data, count, postscale);
    case DataType::kInt64: return PostscaleIntegers<int64_t>(data, count, postscale);
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      return ScaleHostBuffer(data, count, dtype,
                             postscale.factor / static_cast<double>(postscale.divisor));
    case DataType::kBool: return;
  }
}

}  // namespace horde

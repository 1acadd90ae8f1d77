#include "mpi_ops/host_scale.h"

#include "mpi_ops/half_float.h"

namespace horde {
namespace {

template <typename T, typename Compute>
void Scale(void* data, int64_t count, double factor) {
  auto* values = static_cast<T*>(data);
  const auto f = static_cast<Compute>(factor);
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<T>(static_cast<Compute>(values[i]) * f);
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void ScaleHalf(void* data, int64_t count, double factor) {
  auto* values = static_cast<uint16_t*>(data);
  const auto f = static_cast<float>(factor);
  for (int64_t i = 0; i < count; ++i) values[i] = Store(Load(values[i]) * f);
}

}  // namespace

void ScaleHostBuffer(void* data, int64_t count, DataType dtype, double factor) {
  switch (dtype) {
    case DataType::kUInt8: return Scale<uint8_t, double>(data, count, factor);
    case DataType::kInt8: return Scale<int8_t, double>(data, count, factor);
    case DataType::kInt16: return Scale<int16_t, double>(data, count, factor);
    case DataType::kInt32: return Scale<int32_t, double>(data, count, factor);
    case DataType::kInt64: return Scale<int64_t, double>(data, count, factor);
    case DataType::kFloat16: return ScaleHalf<Float16ToFloat, FloatToFloat16>(data, count, factor);
    case DataType::kBFloat16: return ScaleHalf<BFloat16ToFloat, FloatToBFloat16>(data, count, factor);
    case DataType::kFloat32: return Scale<float, float>(data, count, factor);
    case DataType::kFloat64: return Scale<double, double>(data, count, factor);
    case DataType::kBool: return;
  }
}

}  // namespace horde

#include "tests/mpi/typed_values.h"

#include "mpi_ops/half_float.h"

namespace horde {
namespace testing {
namespace {

template <typename T>
void Store(void* data, int64_t index, double value) {
  static_cast<T*>(data)[index] = static_cast<T>(value);
}

template <typename T>
double Load(const void* data, int64_t index) {
  return static_cast<double>(static_cast<const T*>(data)[index]);
}

}  // namespace

const std::vector<DataType>& AllDataTypes() {
  static const std::vector<DataType> all = {
      DataType::kUInt8,   DataType::kInt8,    DataType::kInt16,    DataType::kInt32,
      DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
      DataType::kFloat64, DataType::kBool};
  return all;
}

const std::vector<DataType>& FloatingDataTypes() {
  static const std::vector<DataType> floating = {DataType::kFloat16, DataType::kBFloat16,
                                                 DataType::kFloat32, DataType::kFloat64};
  return floating;
}

void StoreElement(DataType dtype, void* data, int64_t index, double value) {
  switch (dtype) {
    case DataType::kUInt8: return Store<uint8_t>(data, index, value);
    case DataType::kInt8: return Store<int8_t>(data, index, value);
    case DataType::kInt16: return Store<int16_t>(data, index, value);
    case DataType::kInt32: return Store<int32_t>(data, index, value);
    case DataType::kInt64: return Store<int64_t>(data, index, value);
    case DataType::kFloat16:
      static_cast<uint16_t*>(data)[index] = FloatToFloat16(static_cast<float>(value));
      return;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(data)[index] = FloatToBFloat16(static_cast<float>(value));
      return;
    case DataType::kFloat32: return Store<float>(data, index, value);
    case DataType::kFloat64: return Store<double>(data, index, value);
    case DataType::kBool: return Store<bool>(data, index, value != 0);
  }
}

double LoadElement(DataType dtype, const void* data, int64_t index) {
  switch (dtype) {
    case DataType::kUInt8: return Load<uint8_t>(data, index);
    case DataType::kInt8: return Load<int8_t>(data, index);
    case DataType::kInt16: return Load<int16_t>(data, index);
    case DataType::kInt32: return Load<int32_t>(data, index);
    case DataType::kInt64: return Load<int64_t>(data, index);
    case DataType::kFloat16: return Float16ToFloat(static_cast<const uint16_t*>(data)[index]);
    case DataType::kBFloat16: return BFloat16ToFloat(static_cast<const uint16_t*>(data)[index]);
    case DataType::kFloat32: return Load<float>(data, index);
    case DataType::kFloat64: return Load<double>(data, index);
    case DataType::kBool: return Load<bool>(data, index);
  }
  return 0;
}

std::shared_ptr<HostTensor> FilledTensor(DataType dtype, const TensorShape& shape,
                                         const std::function<double(int64_t)>& value) {
  auto tensor = std::make_shared<HostTensor>(dtype, shape);
  const int64_t elements = NumElements(shape);
  for (int64_t k = 0; k < elements; ++k) StoreElement(dtype, tensor->data(), k, value(k));
  return tensor;
}

double MovedValue(DataType dtype, int64_t seed) {
  // 251 is prime, so neighbouring seeds (ranks, tensors, rows) rarely collide; -125..125
  // fits int8 and is exact in bfloat16 (integers up to 256).
  const int64_t wrapped = seed % 251;
  if (dtype == DataType::kBool) return static_cast<double>(seed % 2);
  if (dtype == DataType::kUInt8) return static_cast<double>(wrapped);
  return static_cast<double>(wrapped - 125);
}

int64_t Salt(const std::string& label) {
  int64_t salt = 0;
  for (char c : label) salt = (salt * 31 + static_cast<unsigned char>(c)) % 997;
  return salt;
}

}  // namespace testing
}  // namespace horde

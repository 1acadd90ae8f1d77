#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/host_tensor.h"
#include "horde/data_type.h"

namespace horde {
namespace testing {

// Elements of any horde dtype read and written as doubles, so that one test body covers
// every dtype. The tests only store values the dtype holds exactly (small integers and
// halves, quarters, eighths), so comparing the doubles read back compares exactly.

// Every DataType, in enum order.
const std::vector<DataType>& AllDataTypes();
// The floating types: what Adasum accepts.
const std::vector<DataType>& FloatingDataTypes();

// data[index] = value converted to `dtype` (float16/bfloat16 rounded to nearest).
void StoreElement(DataType dtype, void* data, int64_t index, double value);
// data[index] as a double.
double LoadElement(DataType dtype, const void* data, int64_t index);

// A host tensor whose element k is value(k).
std::shared_ptr<HostTensor> FilledTensor(DataType dtype, const TensorShape& shape,
                                         const std::function<double(int64_t)>& value);

// A value derived from `seed` that every dtype holds exactly and that differs between
// nearby (non-negative) seeds: what the data-moving collectives (gather, broadcast, alltoall)
// carry.
double MovedValue(DataType dtype, int64_t seed);
// A seed offset that differs between tensors of different labels, so that two tensors
// of one fused collective do not carry the same values.
int64_t Salt(const std::string& label);

}  // namespace testing
}  // namespace horde

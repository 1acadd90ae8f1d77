#pragma once

#include <cstdint>

namespace horde {

// Element types horde moves. The numeric values (of ReduceOp too) are part of the wire
// format.
enum class DataType : uint8_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kBFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBool = 9,
};
constexpr int kNumDataTypes = 10;

enum class ReduceOp : uint8_t {
  kSum = 0,
  kAverage = 1,
  kMin = 2,
  kMax = 3,
  kProduct = 4,
  // Adaptive summation (Maleki et al., MLSys 2021): floating-point allreduce only, over
  // a power-of-two number of ranks (mpi_ops/mpi_adasum_allreduce.h).
  kAdasum = 5,
};
constexpr int kNumReduceOps = 6;

int64_t DataTypeSize(DataType dtype);
bool IsFloatingPoint(DataType dtype);
const char* DataTypeName(DataType dtype);
const char* ReduceOpName(ReduceOp op);

}  // namespace horde

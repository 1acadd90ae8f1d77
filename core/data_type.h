#pragma once

#include <cstdint>
#include <string>

namespace horde {

// Element types horde moves. The numeric values are part of the wire format.
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

enum class OpType : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  // A rank that has run out of data; completes when every rank has joined.
  kJoin = 3,
  // Rank r sends its rows [offset_j, offset_j + splits_j) to rank j.
  kAlltoall = 4,
  // Reduces every rank's tensor and leaves rank r its share of the first dimension.
  kReducescatter = 5,
  // Completes once every rank has reached it.
  kBarrier = 6,
};
constexpr int kNumOpTypes = 7;

int64_t DataTypeSize(DataType dtype);
bool IsFloatingPoint(DataType dtype);
const char* DataTypeName(DataType dtype);
const char* ReduceOpName(ReduceOp op);
const char* OpTypeName(OpType op);

// Device id of host memory; GPU devices are numbered from 0.
constexpr int32_t kCpuDevice = -1;
std::string DeviceName(int32_t device);

}  // namespace horde

#include "core/reduce_identity.h"

#include <cstring>
#include <limits>

namespace horde {
namespace {

enum class Extreme { kZero, kOne, kLargest, kLowest };

Extreme ExtremeFor(ReduceOp op) {
  if (op == ReduceOp::kProduct) return Extreme::kOne;
  if (op == ReduceOp::kMin) return Extreme::kLargest;
  if (op == ReduceOp::kMax) return Extreme::kLowest;
  return Extreme::kZero;
}

template <typename T>
IdentityElement Element(T value) {
  IdentityElement identity;
  identity.size = sizeof(T);
  std::memcpy(identity.bytes.data(), &value, sizeof(T));
  return identity;
}

template <typename T>
IdentityElement Numeric(Extreme extreme) {
  using Limits = std::numeric_limits<T>;
  switch (extreme) {
    case Extreme::kZero: return Element<T>(0);
    case Extreme::kOne: return Element<T>(1);
    case Extreme::kLargest:
      return Element<T>(Limits::has_infinity ? Limits::infinity() : Limits::max());
    case Extreme::kLowest:
      return Element<T>(Limits::has_infinity ? -Limits::infinity() : Limits::lowest());
  }
  return Element<T>(0);
}

// float16 and bfloat16 by their bit patterns: zero, one, +inf, -inf.
IdentityElement Half(Extreme extreme, uint16_t one, uint16_t infinity) {
  switch (extreme) {
    case Extreme::kZero: return Element<uint16_t>(0);
    case Extreme::kOne: return Element<uint16_t>(one);
    case Extreme::kLargest: return Element<uint16_t>(infinity);
    case Extreme::kLowest: return Element<uint16_t>(static_cast<uint16_t>(infinity | 0x8000));
  }
  return Element<uint16_t>(0);
}

}  // namespace

bool IdentityElement::zero() const {
  for (int64_t i = 0; i < size; ++i) {
    if (bytes[i] != 0) return false;
  }
  return true;
}

IdentityElement IdentityOf(DataType dtype, ReduceOp op) {
  const Extreme extreme = ExtremeFor(op);
  switch (dtype) {
    case DataType::kUInt8: return Numeric<uint8_t>(extreme);
    case DataType::kInt8: return Numeric<int8_t>(extreme);
    case DataType::kInt16: return Numeric<int16_t>(extreme);
    case DataType::kInt32: return Numeric<int32_t>(extreme);
    case DataType::kInt64: return Numeric<int64_t>(extreme);
    case DataType::kFloat16: return Half(extreme, 0x3C00, 0x7C00);
    case DataType::kBFloat16: return Half(extreme, 0x3F80, 0x7F80);
    case DataType::kFloat32: return Numeric<float>(extreme);
    case DataType::kFloat64: return Numeric<double>(extreme);
    case DataType::kBool:
      // Or (Sum, Max) is neutral with false, and (Min, Product) with true.
      return Element<uint8_t>(extreme == Extreme::kOne || extreme == Extreme::kLargest ? 1 : 0);
  }
  return Element<uint8_t>(0);
}

void FillHost(void* data, int64_t count, const IdentityElement& identity) {
  char* out = static_cast<char*>(data);
  if (identity.zero()) {
    std::memset(out, 0, static_cast<size_t>(count * identity.size));
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(out + i * identity.size, identity.bytes.data(), identity.size);
}

}  // namespace horde

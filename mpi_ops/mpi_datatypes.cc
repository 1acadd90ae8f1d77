#include "mpi_ops/mpi_datatypes.h"

#include <algorithm>
#include <cstdint>

#include "mpi_ops/half_float.h"

namespace horde {
namespace mpi {
namespace {

struct Float16Codec {
  static float Load(uint16_t h) { return Float16ToFloat(h); }
  static uint16_t Store(float f) { return FloatToFloat16(f); }
};
struct BFloat16Codec {
  static float Load(uint16_t h) { return BFloat16ToFloat(h); }
  static uint16_t Store(float f) { return FloatToBFloat16(f); }
};

struct SumOf {
  static float Apply(float a, float b) { return a + b; }
};
struct MinOf {
  static float Apply(float a, float b) { return std::min(a, b); }
};
struct MaxOf {
  static float Apply(float a, float b) { return std::max(a, b); }
};
struct ProductOf {
  static float Apply(float a, float b) { return a * b; }
};

// MPI_User_function: inout[i] = in[i] (op) inout[i], computed in float32.
template <typename Codec, typename Reduction>
void HalfReduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    b[i] = Codec::Store(Reduction::Apply(Codec::Load(a[i]), Codec::Load(b[i])));
  }
}

template <typename Codec>
void CreateHalfOps(MPI_Op* ops) {
  // Ops without an MPI function (Adasum) stay MPI_OP_NULL, which the destructor skips;
  // a value-initialized MPI_Op is not MPI_OP_NULL in Open MPI.
  std::fill(ops, ops + kNumReduceOps, MPI_OP_NULL);
  MPI_Op_create(&HalfReduce<Codec, SumOf>, 1, &ops[static_cast<int>(ReduceOp::kSum)]);
  ops[static_cast<int>(ReduceOp::kAverage)] = ops[static_cast<int>(ReduceOp::kSum)];
  MPI_Op_create(&HalfReduce<Codec, MinOf>, 1, &ops[static_cast<int>(ReduceOp::kMin)]);
  MPI_Op_create(&HalfReduce<Codec, MaxOf>, 1, &ops[static_cast<int>(ReduceOp::kMax)]);
  MPI_Op_create(&HalfReduce<Codec, ProductOf>, 1, &ops[static_cast<int>(ReduceOp::kProduct)]);
}

// uint8 Min and Max compare unsigned values with these instead of MPI_MIN/MPI_MAX, on
// every MPI: MPICH 4.0 (Debian 12's) compares MPI_UINT8_T as signed there, so that
// min(3, 255) is 255 and max(3, 200) is 3.
struct UInt8Min {
  static uint8_t Apply(uint8_t a, uint8_t b) { return std::min(a, b); }
};
struct UInt8Max {
  static uint8_t Apply(uint8_t a, uint8_t b) { return std::max(a, b); }
};

template <typename Reduction>
void UInt8Reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint8_t*>(in);
  auto* b = static_cast<uint8_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Reduction::Apply(a[i], b[i]);
}

MPI_Op BuiltinOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kAdasum: return MPI_OP_NULL;  // no MPI op: MpiAdasumAllreduce runs it
  }
  return MPI_OP_NULL;
}

MPI_Op LogicalOp(ReduceOp op) {
  return op == ReduceOp::kMin || op == ReduceOp::kProduct ? MPI_LAND : MPI_LOR;
}

}  // namespace

MpiDatatypes::MpiDatatypes() {
  MPI_Type_contiguous(2, MPI_BYTE, &float16_);
  MPI_Type_commit(&float16_);
  MPI_Type_contiguous(2, MPI_BYTE, &bfloat16_);
  MPI_Type_commit(&bfloat16_);
  CreateHalfOps<Float16Codec>(half_ops_[0]);
  CreateHalfOps<BFloat16Codec>(half_ops_[1]);
  MPI_Op_create(&UInt8Reduce<UInt8Min>, 1, &uint8_min_);
  MPI_Op_create(&UInt8Reduce<UInt8Max>, 1, &uint8_max_);
}

MpiDatatypes::~MpiDatatypes() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& ops : half_ops_) {
    for (int op = 0; op < kNumReduceOps; ++op) {
      if (op != static_cast<int>(ReduceOp::kAverage) && ops[op] != MPI_OP_NULL)
        MPI_Op_free(&ops[op]);
    }
  }
  MPI_Op_free(&uint8_min_);
  MPI_Op_free(&uint8_max_);
  MPI_Type_free(&float16_);
  MPI_Type_free(&bfloat16_);
}

MPI_Datatype MpiDatatypes::Datatype(DataType dtype) const {
  switch (dtype) {
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat16: return float16_;
    case DataType::kBFloat16: return bfloat16_;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kBool: return MPI_C_BOOL;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op MpiDatatypes::Op(DataType dtype, ReduceOp op) const {
  switch (dtype) {
    case DataType::kFloat16: return half_ops_[0][static_cast<int>(op)];
    case DataType::kBFloat16: return half_ops_[1][static_cast<int>(op)];
    case DataType::kBool: return LogicalOp(op);
    case DataType::kUInt8:
      if (op == ReduceOp::kMin) return uint8_min_;
      if (op == ReduceOp::kMax) return uint8_max_;
      return BuiltinOp(op);
    default: return BuiltinOp(op);
  }
}

}  // namespace mpi
}  // namespace horde

#include "gpu_ops/nccl_datatypes.h"

namespace horde {
namespace gpu {

bool NcclType(DataType dtype, ncclDataType_t* type) {
  switch (dtype) {
    case DataType::kUInt8: *type = ncclUint8; return true;
    case DataType::kInt8: *type = ncclInt8; return true;
    case DataType::kInt32: *type = ncclInt32; return true;
    case DataType::kInt64: *type = ncclInt64; return true;
    case DataType::kFloat16: *type = ncclFloat16; return true;
    case DataType::kBFloat16: *type = ncclBfloat16; return true;
    case DataType::kFloat32: *type = ncclFloat32; return true;
    case DataType::kFloat64: *type = ncclFloat64; return true;
    case DataType::kInt16:
    case DataType::kBool: return false;
  }
  return false;
}

ncclRedOp_t NcclOp(ReduceOp op, DataType dtype) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kAverage: return IsFloatingPoint(dtype) ? ncclAvg : ncclSum;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return ncclProd;
    case ReduceOp::kAdasum: break;  // never asked: Adasum on GPUs is staged through the host
  }
  return ncclSum;
}

Postscale NcclPostscale(const Response& response, int size) {
  // ncclAvg has divided floating types already.
  if (IsFloatingPoint(response.dtype)) return Postscale{response.postscale, 1};
  return PostscaleOf(response, size);
}

}  // namespace gpu
}  // namespace horde

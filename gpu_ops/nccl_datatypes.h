#pragma once

#include <nccl.h>

#include "core/response.h"
#include "horde/data_type.h"
#include "mpi_ops/postscale.h"

namespace horde {
namespace gpu {

// NCCL's type for `dtype`; false for the types NCCL lacks (int16, bool), which the GPU
// path then reduces through host staging.
bool NcclType(DataType dtype, ncclDataType_t* type);

// NCCL's reduction for `op` on `dtype`: Average is ncclAvg for floating types; for
// integers it is a sum, divided afterwards by a scale kernel (as the host path truncates).
ncclRedOp_t NcclOp(ReduceOp op, DataType dtype);

// What to apply after NcclOp's reduction over `size` ranks: the response's postscale,
// after an exact division by `size` where NcclOp summed an integer average.
Postscale NcclPostscale(const Response& response, int size);

}  // namespace gpu
}  // namespace horde

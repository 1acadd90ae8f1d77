#pragma once

#include <nccl.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace horde {
namespace mpi {

// Turns an NCCL return code into a Status naming the NCCL call and the horde operation
// (op and tensor name) it served, with NCCL's own text, e.g.
// "allreduce 'grad.fc1': ncclAllReduce failed: invalid argument".
Status CheckNccl(ncclResult_t code, const char* call, const std::string& operation);

// "allreduce 'name'" or "allreduce of 3 tensors ('a', ...)": how errors name a response.
std::string OperationName(const char* op, const std::vector<std::string>& names);

}  // namespace mpi
}  // namespace horde

#pragma once

#include <nccl.h>

#include <string>
#include <vector>

#include "core/operation_name.h"
#include "horde/status.h"

namespace horde {
namespace gpu {

// Turns an NCCL return code into a Status naming the NCCL call and the horde operation
// (op and tensor name) it served, with NCCL's own text, e.g.
// "allreduce 'grad.fc1': ncclAllReduce failed: invalid argument".
Status CheckNccl(ncclResult_t code, const char* call, const std::string& operation);

}  // namespace gpu
}  // namespace horde

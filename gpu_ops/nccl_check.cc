#include "gpu_ops/nccl_check.h"

namespace horde {
namespace gpu {

Status CheckNccl(ncclResult_t code, const char* call, const std::string& operation) {
  if (code == ncclSuccess) return Status::Ok();
  return Status::Internal(operation + ": " + call + " failed: " + ncclGetErrorString(code));
}

}  // namespace gpu
}  // namespace horde

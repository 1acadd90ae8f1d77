#include "gpu_ops/cuda_check.h"

namespace horde {
namespace gpu {

Status CheckCuda(cudaError_t code, const char* call, const std::string& what) {
  if (code == cudaSuccess) return Status::Ok();
  return Status::Internal(std::string(call) + " (" + what + "): " + cudaGetErrorString(code));
}

}  // namespace gpu
}  // namespace horde

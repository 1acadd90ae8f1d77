#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "horde/status.h"

namespace horde {
namespace gpu {

// Turns a CUDA return code into a Status naming the call and what it was for, with
// CUDA's own text, e.g. "cudaMalloc (fusion buffer on cuda:0): out of memory".
Status CheckCuda(cudaError_t code, const char* call, const std::string& what);

}  // namespace gpu
}  // namespace horde

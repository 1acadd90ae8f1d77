#pragma once

#include "mpi_ops/make_runtime.h"

namespace horde {
namespace gpu {

// This build's GPU path as the device ops of mpi::MakeRuntime: registers the GPU
// collectives with the agreed HORDE_GPU_OPERATIONS and HORDE_HIERARCHICAL_ALLREDUCE, and
// names the NCCL version in the build identity. A build without CUDA and NCCL registers
// nothing and names none.
mpi::DeviceOps GpuDeviceOps();

}  // namespace gpu
}  // namespace horde

#pragma once

#include <memory>

#include "core/op_registry.h"
#include "core/timeline.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/mpi_datatypes.h"

namespace horde {
namespace gpu {

// How the GPU path reduces GPU tensors.
struct GpuSettings {
  // HORDE_GPU_OPERATIONS=NCCL (default) or MPI: MPI stages every GPU tensor through host
  // memory (also what two ranks sharing one GPU need).
  bool use_nccl = true;
  // HORDE_HIERARCHICAL_ALLREDUCE=1: NCCL inside the node, MPI across nodes.
  bool hierarchical_allreduce = false;
};

// Registers the GPU implementations of the collectives (enabled for tensors on a GPU),
// to be called before the host ones are registered (GpuDeviceOps, device_ops.h, hands it
// to mpi::MakeRuntime). A build without CUDA and NCCL
// (gpu_ops_none.cc) registers nothing, so GPU tensors fail with "this build has no ...".
void RegisterGpuOps(OpRegistry* ops, const std::shared_ptr<mpi::MpiContext>& context,
                    const std::shared_ptr<mpi::MpiDatatypes>& types,
                    const std::shared_ptr<Timeline>& timeline, const GpuSettings& settings);

// Whether this build has the GPU path (for nccl_built() / cuda_built()).
bool GpuOpsBuilt();

// NCCL_VERSION_CODE of the NCCL this build was compiled against (e.g. 2708 for 2.7.8,
// 21903 for 2.19.3), 0 without the GPU path: what Horovod's nccl_built() returns.
int NcclVersionBuilt();

}  // namespace gpu
}  // namespace horde

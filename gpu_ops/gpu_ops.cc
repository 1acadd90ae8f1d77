#include "gpu_ops/gpu_ops.h"

#include <nccl.h>

#include "gpu_ops/cuda_identity.h"
#include "gpu_ops/hierarchical_allreduce.h"
#include "gpu_ops/host_staged_adasum.h"
#include "gpu_ops/host_staged_op.h"
#include "gpu_ops/nccl_allgather.h"
#include "gpu_ops/nccl_allreduce.h"
#include "gpu_ops/nccl_alltoall.h"
#include "gpu_ops/nccl_broadcast.h"
#include "gpu_ops/nccl_reducescatter.h"
#include "mpi_ops/mpi_allgather.h"
#include "mpi_ops/mpi_allreduce.h"
#include "mpi_ops/mpi_alltoall.h"
#include "mpi_ops/mpi_broadcast.h"
#include "mpi_ops/mpi_reducescatter.h"

namespace horde {
namespace gpu {

void RegisterGpuOps(OpRegistry* ops, const std::shared_ptr<mpi::MpiContext>& context,
                    const std::shared_ptr<mpi::MpiDatatypes>& types,
                    const std::shared_ptr<Timeline>& timeline, const GpuSettings& settings) {
  auto resources = std::make_shared<NcclResources>(context, timeline);
  ops->SetDeviceIdentity([resources](DataType dtype, ReduceOp op, const TensorShape& shape,
                                     int32_t device, std::shared_ptr<Tensor>* out) {
    cudaStream_t stream;
    HORDE_RETURN_IF_ERROR(resources->devices.Stream(device, &stream));
    return CudaIdentity::Create(dtype, op, shape, device, stream, out);
  });
  // Before every other GPU allreduce, none of which has Adasum.
  ops->Register(OpType::kAllreduce,
                std::make_unique<HostStagedAdasum>(resources, context, timeline));
  if (settings.use_nccl) {
    if (settings.hierarchical_allreduce) {
      ops->Register(OpType::kAllreduce, std::make_unique<HierarchicalAllreduce>(resources, types));
    }
    ops->Register(OpType::kAllreduce, std::make_unique<NcclAllreduce>(resources));
    ops->Register(OpType::kAllgather, std::make_unique<NcclAllgather>(resources));
    ops->Register(OpType::kBroadcast, std::make_unique<NcclBroadcast>(resources));
    ops->Register(OpType::kAlltoall, std::make_unique<NcclAlltoall>(resources));
    ops->Register(OpType::kReducescatter, std::make_unique<NcclReducescatter>(resources));
  }
  // What NCCL does not take (int16, bool, or everything under HORDE_GPU_OPERATIONS=MPI)
  // goes through host memory to the MPI implementations.
  auto staged = [&](std::unique_ptr<CollectiveOp> host_op) {
    return std::make_unique<HostStagedOp>(resources, std::move(host_op));
  };
  // Staged GPU tensors fuse in a host buffer of their own.
  ops->Register(OpType::kAllreduce,
                staged(std::make_unique<mpi::MpiAllreduce>(
                    context, types, timeline, std::make_shared<mpi::FusionBuffer>(context))));
  ops->Register(OpType::kAllgather, staged(std::make_unique<mpi::MpiAllgather>(context)));
  ops->Register(OpType::kBroadcast, staged(std::make_unique<mpi::MpiBroadcast>(context)));
  ops->Register(OpType::kAlltoall, staged(std::make_unique<mpi::MpiAlltoall>(context)));
  ops->Register(OpType::kReducescatter,
                staged(std::make_unique<mpi::MpiReducescatter>(context, types)));
}

bool GpuOpsBuilt() { return true; }

int NcclVersionBuilt() { return NCCL_VERSION_CODE; }

}  // namespace gpu
}  // namespace horde

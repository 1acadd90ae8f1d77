#include "gpu_ops/device_ops.h"

#include <string>

#include "gpu_ops/gpu_ops.h"

namespace horde {
namespace gpu {

mpi::DeviceOps GpuDeviceOps() {
  mpi::DeviceOps device;
  if (GpuOpsBuilt()) device.library = "NCCL " + std::to_string(NcclVersionBuilt());
  device.register_ops = [](const Config& config, OpRegistry* ops,
                           const std::shared_ptr<mpi::MpiContext>& context,
                           const std::shared_ptr<mpi::MpiDatatypes>& types,
                           const std::shared_ptr<Timeline>& timeline) {
    GpuSettings settings;
    settings.use_nccl = config.gpu_operations_nccl;
    settings.hierarchical_allreduce = config.hierarchical_allreduce;
    RegisterGpuOps(ops, context, types, timeline, settings);
  };
  return device;
}

}  // namespace gpu
}  // namespace horde

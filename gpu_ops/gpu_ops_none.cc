#include "gpu_ops/gpu_ops.h"

namespace horde {
namespace gpu {

// The build without CUDA and NCCL (cmake/cuda.cmake picks this file).
void RegisterGpuOps(OpRegistry*, const std::shared_ptr<mpi::MpiContext>&,
                    const std::shared_ptr<mpi::MpiDatatypes>&, const std::shared_ptr<Timeline>&,
                    const GpuSettings&) {}

bool GpuOpsBuilt() { return false; }

int NcclVersionBuilt() { return 0; }

}  // namespace gpu
}  // namespace horde

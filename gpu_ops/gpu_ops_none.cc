#include "mpi_ops/gpu_ops.h"

namespace horde {
namespace mpi {

// The build without CUDA and NCCL (cmake/cuda.cmake picks this file).
void RegisterGpuOps(OpRegistry*, const std::shared_ptr<MpiContext>&,
                    const std::shared_ptr<MpiDatatypes>&, const std::shared_ptr<Timeline>&,
                    const GpuSettings&) {}

bool GpuOpsBuilt() { return false; }

int NcclVersionBuilt() { return 0; }

}  // namespace mpi
}  // namespace horde

#include "gpu_ops/nccl_broadcast.h"

#include "gpu_ops/nccl_allreduce.h"
#include "gpu_ops/nccl_check.h"
#include "gpu_ops/nccl_launch.h"

namespace horde {
namespace gpu {

bool NcclBroadcast::Enabled(const Response& response,
                            const std::vector<TensorEntry>& entries) const {
  return NcclTakes(response, false);
}

Status NcclBroadcast::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("broadcast", response.names);
  NcclSteps steps;
  steps.enqueue = [&](NcclLaunch& launch) {
    return launch.Nccl([&](ncclComm_t comm, cudaStream_t stream) {
      for (TensorEntry& e : entries) {
        HORDE_RETURN_IF_ERROR(
            CheckNccl(ncclBroadcast(e.input->data(), e.output->data(), e.input->size_bytes(),
                                    ncclUint8, response.root, comm, stream),
                      "ncclBroadcast", what));
      }
      return Status::Ok();
    });
  };
  return LaunchNccl(*r_, entries, what, steps);
}

}  // namespace gpu
}  // namespace horde

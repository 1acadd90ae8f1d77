#pragma once

#include <memory>
#include <utility>

#include "core/collective_op.h"
#include "gpu_ops/nccl_resources.h"

namespace horde {
namespace gpu {

// Runs a host (MPI) implementation on GPU tensors: copies the inputs to host memory on
// the runtime stream (after their ready events), runs the wrapped op, and copies the
// outputs back. It waits for the GPU on the background thread, so it is the fallback:
// for types NCCL lacks, for HORDE_GPU_OPERATIONS=MPI, and for ranks sharing a GPU.
// The ranks agree that every one could stage its tensors before the host op runs.
class HostStagedOp : public CollectiveOp {
 public:
  HostStagedOp(std::shared_ptr<NcclResources> resources, std::unique_ptr<CollectiveOp> host_op)
      : r_(std::move(resources)), host_op_(std::move(host_op)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override {
    return response.device >= 0;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  // Host copies of the entries' tensors, filled on `stream`, which this waits for.
  Status Stage(std::vector<TensorEntry>& entries, cudaStream_t stream, const std::string& what,
               std::vector<TensorEntry>* host);

  std::shared_ptr<NcclResources> r_;
  std::unique_ptr<CollectiveOp> host_op_;
};

}  // namespace gpu
}  // namespace horde

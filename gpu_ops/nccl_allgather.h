#pragma once

#include <memory>
#include <utility>

#include "core/collective_op.h"
#include "gpu_ops/nccl_resources.h"

namespace horde {
namespace gpu {

// Allgather of GPU tensors with NCCL, as bytes (so every dtype works). Equal first
// dimensions use ncclAllGather; differing ones one ncclBroadcast per rank into its rows
// of the output, all in one NCCL group.
class NcclAllgather : public CollectiveOp {
 public:
  explicit NcclAllgather(std::shared_ptr<NcclResources> resources) : r_(std::move(resources)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  // The output of every rank's rows; then the NCCL calls that fill it.
  static Status AllocateOutput(TensorEntry& entry, const int64_t* first_dims, int size);
  static Status Gather(TensorEntry& entry, const int64_t* first_dims, int size, ncclComm_t comm,
                       cudaStream_t stream, const std::string& what);

  std::shared_ptr<NcclResources> r_;
};

}  // namespace gpu
}  // namespace horde

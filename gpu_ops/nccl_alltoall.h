#pragma once

#include <memory>
#include <utility>

#include "core/collective_op.h"
#include "gpu_ops/nccl_resources.h"

namespace horde {
namespace gpu {

// Alltoall of GPU tensors: the ranks exchange row counts over MPI (host integers),
// agree that every rank could allocate its output, then move the rows with paired
// ncclSend/ncclRecv in one NCCL group. A rank that cannot take part fails with its
// reason and the others with an error; none is left waiting inside NCCL.
class NcclAlltoall : public CollectiveOp {
 public:
  explicit NcclAlltoall(std::shared_ptr<NcclResources> resources) : r_(std::move(resources)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  // Sends this rank's row counts for `entry` to every rank and receives theirs (all
  // zeros sent when its splits are wrong, `local` then saying why, so the peers are not
  // left waiting in MPI). Fails only when MPI does.
  Status ExchangeCounts(const TensorEntry& entry, const std::string& what, Status* local,
                        std::vector<int64_t>* sent, std::vector<int64_t>* received);
  // This rank's part: the counts it receives, its output and received_splits.
  Status Prepare(TensorEntry& entry, const std::vector<int64_t>& received, cudaStream_t stream,
                 const std::string& what);
  // The paired sends and receives of the rows.
  static Status Exchange(TensorEntry& entry, const std::vector<int64_t>& sent,
                         const std::vector<int64_t>& received, ncclComm_t comm, cudaStream_t stream,
                         const std::string& what);

  std::shared_ptr<NcclResources> r_;
};

}  // namespace gpu
}  // namespace horde

#pragma once

#include <memory>

#include "gpu_ops/nccl_allreduce.h"
#include "mpi_ops/host_buffer.h"
#include "mpi_ops/mpi_datatypes.h"

namespace horde {
namespace gpu {

// HORDE_HIERARCHICAL_ALLREDUCE=1 on several nodes: NCCL reduce-scatter within the node
// leaves each local rank one shard; each shard is allreduced across nodes with MPI
// (through host memory, among the ranks of the same local rank); NCCL allgather within
// the node puts the shards back together. The elements that do not divide evenly into
// shards are allreduced in the node and across nodes whole. Fusion as NcclAllreduce.
// The MPI step waits for the GPU on the background thread.
class HierarchicalAllreduce : public NcclAllreduce {
 public:
  HierarchicalAllreduce(std::shared_ptr<NcclResources> resources,
                        std::shared_ptr<mpi::MpiDatatypes> types)
      : NcclAllreduce(std::move(resources)), types_(std::move(types)) {}
  ~HierarchicalAllreduce() override;

  // As NcclAllreduce, on more than one node with the same number of ranks on each.
  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;

 protected:
  // The NCCL communicator within this node.
  Status Communicator(int device, const std::string& what, ncclComm_t* comm) override;
  Status Reduce(void* data, int64_t count, const Response& response, NcclLaunch& launch) override;

 private:
  // Splits the runtime's communicator into node and cross-node ones on first use (every
  // rank executes the same first hierarchical allreduce).
  Status EnsureCommunicators();
  // The MPI allreduce across nodes of `count` elements of device memory at `data`.
  Status ReduceAcrossNodes(char* data, int64_t count, const Response& response, NcclLaunch& launch);

  std::shared_ptr<mpi::MpiDatatypes> types_;
  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Comm cross_ = MPI_COMM_NULL;
  HostBuffer staging_;
  int64_t staging_agreed_ = 0;  // the most staging bytes every rank has held
};

}  // namespace gpu
}  // namespace horde

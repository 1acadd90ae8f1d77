#pragma once

#include <memory>
#include <vector>

#include "mpi_ops/host_buffer.h"
#include "mpi_ops/mpi_planned_allreduce.h"

namespace horde {
namespace mpi {

// Allreduce of host tensors in a job of several hosts with the same number of ranks on
// each, planned over the hosts' links (mpi_ops/job_topology.h): the ranks of a host
// reduce-scatter the buffer over shared memory, so that each holds one shard reduced over
// its host; each shard is allreduced across the hosts among the ranks with the same local
// rank, as the plan says for its size (trees, ring in host order, or MPI's allreduce;
// every host's NIC carries the whole buffer once, in shards, and
// every rank of a host keeps it busy); the host's ranks allgather the shards. Used for
// buffers from the plan's smallest tree allreduce times the ranks a host; smaller ones,
// and Adasum, decline to MPI's allreduce. The GPU path would keep the plan and the
// cross-host step and swap the two shared-memory steps for NCCL's within the node.
class MpiHierarchicalAllreduce : public MpiPlannedAllreduce {
 public:
  // `plan` spans the hosts, in the order of context->cross().
  MpiHierarchicalAllreduce(std::shared_ptr<MpiContext> context, std::shared_ptr<MpiDatatypes> types,
                           std::shared_ptr<Timeline> timeline,
                           std::shared_ptr<FusionBuffer> fusion_buffer,
                           std::shared_ptr<const TopologyPlan> plan);

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;

 protected:
  Status Combine(char* data, int64_t count, const Response& response) override;

 private:
  HostBuffer shard_;
  std::vector<int> counts_, offsets_;  // each local rank's shard, in elements
};

}  // namespace mpi
}  // namespace horde

#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "gpu_ops/host_staged_op.h"
#include "mpi_ops/mpi_adasum_allreduce.h"

namespace horde {
namespace gpu {

// Adasum allreduce of GPU tensors, staged through host memory: NCCL has no Adasum, so
// the tensors are copied to the host, reduced by MpiAdasumAllreduce (dot products and
// combination in float64 on the CPU), and copied back. Registered before the NCCL
// allreduces, which must not see an Adasum response. Unlike Horovod's GPU Adasum (NCCL
// inside the node, Adasum across nodes), every rank takes part in the Adasum itself, so
// GPU and CPU tensors get the same result.
class HostStagedAdasum : public HostStagedOp {
 public:
  HostStagedAdasum(std::shared_ptr<NcclResources> resources,
                   std::shared_ptr<mpi::MpiContext> context, std::shared_ptr<Timeline> timeline)
      : HostStagedOp(std::move(resources), std::make_unique<mpi::MpiAdasumAllreduce>(
                                               std::move(context), std::move(timeline))) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override {
    return response.reduce_op == ReduceOp::kAdasum && HostStagedOp::Enabled(response, entries);
  }
};

}  // namespace gpu
}  // namespace horde

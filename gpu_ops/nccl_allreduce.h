#pragma once

#include <memory>
#include <utility>

#include "core/collective_op.h"
#include "gpu_ops/nccl_launch.h"
#include "gpu_ops/nccl_resources.h"

namespace horde {
namespace gpu {

// Allreduce of GPU tensors with NCCL on the runtime's stream. One tensor is reduced in
// place in its output; several are packed into the device fusion buffer with one batched
// copy kernel, reduced, and copied out the same way. Pre/post scaling runs as kernels on
// the same stream. Nothing here waits for the GPU: the finalizer completes the entries.
class NcclAllreduce : public CollectiveOp {
 public:
  explicit NcclAllreduce(std::shared_ptr<NcclResources> resources) : r_(std::move(resources)) {}

  // GPU tensors of a type NCCL has (int16 and bool go through host staging).
  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 protected:
  // The communicator Reduce runs over: all of the runtime's ranks on `device`.
  virtual Status Communicator(int device, const std::string& what, ncclComm_t* comm);
  // Scales, reduces and scales `count` elements at `data` on the launch's stream (the
  // algorithm; HierarchicalAllreduce replaces it and keeps the fusion handling).
  virtual Status Reduce(void* data, int64_t count, const Response& response, NcclLaunch& launch);

  std::shared_ptr<NcclResources> r_;

 private:
  // Enqueue the work for one tensor (in its output) or several (through the fusion buffer).
  Status EnqueueOne(TensorEntry& entry, const Response& response, NcclLaunch& launch);
  Status EnqueueFused(std::vector<TensorEntry>& entries, const Response& response,
                      NcclLaunch& launch);
};

// Whether the NCCL ops take the response: it is on a GPU and (if asked) of a type NCCL
// has. Decided from the response alone, the same on every rank, so no rank falls back
// to host staging while its peers wait in NCCL. Shared by the NCCL ops' Enabled().
bool NcclTakes(const Response& response, bool needs_nccl_type);

}  // namespace gpu
}  // namespace horde

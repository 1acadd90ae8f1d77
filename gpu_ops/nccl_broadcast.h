#pragma once

#include <memory>
#include <utility>

#include "core/collective_op.h"
#include "gpu_ops/nccl_resources.h"

namespace horde {
namespace gpu {

// Broadcast of GPU tensors from the response's root with NCCL, as bytes, into each
// output (the root's input is its source), all tensors in one NCCL group.
class NcclBroadcast : public CollectiveOp {
 public:
  explicit NcclBroadcast(std::shared_ptr<NcclResources> resources) : r_(std::move(resources)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  std::shared_ptr<NcclResources> r_;
};

}  // namespace gpu
}  // namespace horde

#pragma once

#include <memory>
#include <utility>

#include "core/collective_op.h"
#include "gpu_ops/nccl_launch.h"
#include "gpu_ops/nccl_resources.h"

namespace horde {
namespace gpu {

// Reducescatter of GPU tensors with NCCL: rank r keeps its share of the first dimension
// (core/row_split.h). Equal shares use ncclReduceScatter; unequal ones one ncclReduce
// per rank to that rank, in one NCCL group. A prescaled input is scaled in the device
// fusion buffer, never in the caller's tensor.
class NcclReducescatter : public CollectiveOp {
 public:
  explicit NcclReducescatter(std::shared_ptr<NcclResources> resources) : r_(std::move(resources)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  // This rank's share of the rows; then the NCCL calls that fill it (prescaling through
  // `scratch`, at least the input's size, when the response asks for it).
  Status AllocateOutput(TensorEntry& entry, const std::string& what) const;
  Status Scatter(TensorEntry& entry, const Response& response, char* scratch, NcclLaunch& launch);

  std::shared_ptr<NcclResources> r_;
};

}  // namespace gpu
}  // namespace horde

#pragma once

#include <memory>

#include "core/collective_op.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// Allgather of host tensors whose first dimension may differ per rank: the response
// carries every rank's first dimension, the output is allocated to their sum, and each
// rank's rows land at its offset.
class MpiAllgather : public CollectiveOp {
 public:
  explicit MpiAllgather(std::shared_ptr<MpiContext> context) : context_(std::move(context)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  Status Gather(TensorEntry& entry, const int64_t* first_dims);

  std::shared_ptr<MpiContext> context_;
};

}  // namespace mpi
}  // namespace horde

#pragma once

#include <memory>

#include "core/collective_op.h"
#include "mpi_ops/host_buffer.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// Allgather of host tensors whose first dimension may differ per rank: the response
// carries every rank's first dimension, the output is allocated to their sum, and each
// rank's rows land at its offset. A fused response (several tensors) is one
// MPI_Allgatherv through host buffers.
class MpiAllgather : public CollectiveOp {
 public:
  explicit MpiAllgather(std::shared_ptr<MpiContext> context) : context_(std::move(context)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  // `first_dims`: each rank's first dimension of this entry's tensor.
  Status AllocateOutput(TensorEntry& entry, const int64_t* first_dims) const;
  Status Gather(TensorEntry& entry, const int64_t* first_dims);
  // `first_dims`: as the response carries them, tensor after tensor.
  Status GatherFused(std::vector<TensorEntry>& entries, const std::vector<int64_t>& first_dims);

  std::shared_ptr<MpiContext> context_;
  HostBuffer send_;
  HostBuffer received_;
};

}  // namespace mpi
}  // namespace horde

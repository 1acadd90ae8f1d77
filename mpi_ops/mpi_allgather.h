#pragma once

#include <memory>
#include <vector>

#include "core/collective_op.h"
#include "mpi_ops/host_buffer.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// Allgather of host tensors whose first dimension may differ per rank: the response
// carries every rank's first dimension, the output is allocated to their sum, and each
// rank's rows land at its offset. A fused response (several tensors) is one
// MPI call through host buffers. Outputs and buffers are allocated first, and the
// ranks agree that every one of them could before any data moves.
class MpiAllgather : public CollectiveOp {
 public:
  // `allocate` backs the fused send and receive buffers (tests inject failures).
  explicit MpiAllgather(std::shared_ptr<MpiContext> context,
                        HostAllocator allocate = AlignedAllocate)
      : context_(std::move(context)), send_(allocate), received_(allocate) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  // The MPI call's layout: per rank, the bytes of its block and where it lands, and
  // (fused) the buffers it goes through.
  struct Layout {
    std::vector<int64_t> row_bytes;  // per tensor
    std::vector<int> counts;
    std::vector<int> displacements;
    char* send = nullptr;
    char* received = nullptr;
  };

  // Allocates the outputs (and, fused, the buffers) and lays out the call.
  Status Prepare(std::vector<TensorEntry>& entries, const std::vector<int64_t>& first_dims,
                 Layout* layout);
  // `first_dims`: each rank's first dimension of this entry's tensor.
  Status AllocateOutput(TensorEntry& entry, const int64_t* first_dims) const;
  // The one MPI call, from `send` (this rank's block) into `received` (all blocks).
  Status Gather(const void* send, void* received, const Layout& layout);
  // `first_dims`: as the response carries them, tensor after tensor.
  Status GatherFused(std::vector<TensorEntry>& entries, const std::vector<int64_t>& first_dims,
                     const Layout& layout);

  std::shared_ptr<MpiContext> context_;
  HostBuffer send_;
  HostBuffer received_;
};

}  // namespace mpi
}  // namespace horde

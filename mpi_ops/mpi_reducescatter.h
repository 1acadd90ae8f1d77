#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/collective_op.h"
#include "mpi_ops/host_buffer.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/mpi_datatypes.h"
#include "mpi_ops/ring_allreduce.h"

namespace horde {
namespace mpi {

// Reducescatter of host tensors with MPI: every rank's tensor (all of one shape) is
// reduced, and rank r keeps its share of the first dimension (core/row_split.h). A
// prescaled input is scaled in a persistent buffer, never in the caller's tensor. A
// fused response (several tensors) is one reduce-scatter: each rank's rows of every
// tensor are packed into its block, and this rank's share is unpacked into the outputs.
// From kRingBytes on it runs on horde's ring (mpi_ops/ring_allreduce.h), which keeps its
// buffers from call to call: Open MPI's reduce-scatter allocates temporaries as large as
// the message every call, and where first touching memory is slow their page faults
// cost more than the transfer (2026-11-29, the 2-core test VM, four 25 MiB float32
// tensors fused on 2 ranks: 480 ms with MPI_Ireduce_scatter, 24 ms on the ring).
// Outputs and buffers are allocated first, and the ranks agree that every one of them
// could before any data moves.
class MpiReducescatter : public CollectiveOp {
 public:
  static constexpr int64_t kRingBytes = 1 << 20;

  // `allocate` backs the prescaled and fused buffers (tests inject failures).
  MpiReducescatter(std::shared_ptr<MpiContext> context, std::shared_ptr<MpiDatatypes> types,
                   HostAllocator allocate = AlignedAllocate)
      : context_(std::move(context)),
        types_(std::move(types)),
        prescaled_(allocate),
        received_(allocate) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  struct Split;
  // Allocates the outputs and buffers and lays out the call: each tensor's split, the
  // elements each rank receives, what this rank sends and where it receives.
  Status Prepare(std::vector<TensorEntry>& entries, const Response& response,
                 std::vector<Split>* splits, std::vector<int64_t>* counts,
                 std::vector<int>* int_counts, const void** send, void** received);
  // The input to send: the tensor itself, or a prescaled copy of it.
  Status ScaledInput(TensorEntry& entry, const Response& response, const void** send);
  // The send buffer of several tensors (a fused response).
  Status Pack(std::vector<TensorEntry>& entries, const std::vector<Split>& splits,
              const Response& response, const void** send);
  static std::string OpName(const std::vector<TensorEntry>& entries);
  // Reduces `send` (every rank's blocks) into `received` (this rank's): over horde's ring
  // from kRingBytes on, else with MPI_Ireduce_scatter.
  Status Combine(const void* send, void* received, const std::vector<int>& int_counts,
                 const Response& response);
  Status CombineOnRing(const void* send, void* received, const std::vector<int>& int_counts,
                       const Response& response);

  std::shared_ptr<MpiContext> context_;
  std::shared_ptr<MpiDatatypes> types_;
  HostBuffer prescaled_;
  HostBuffer received_;
  HostBuffer ring_work_;                 // the ring reduces a copy of the send buffer
  std::unique_ptr<RingAllreduce> ring_;  // over the communicator it was made for
};

}  // namespace mpi
}  // namespace horde

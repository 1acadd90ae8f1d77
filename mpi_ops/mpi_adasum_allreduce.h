#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "core/collective_op.h"
#include "core/timeline.h"
#include "mpi_ops/adasum_math.h"
#include "mpi_ops/host_buffer.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// Allreduce with op=Adasum of host tensors, as Horovod runs it on MPI: recursive vector
// halving with distance doubling, then the halves travel back.
//
// At level k (distance d = 2^k) a rank pairs with rank ^ d. Both hold the same window of
// the flat buffer; each keeps one half, sends the other half to its partner and receives
// the partner's copy of the half it kept. The 2^(k+1) ranks that share the bits above k
// together hold two whole vectors (that of their lower and that of their upper half):
// they add up their pieces' dot products and squared norms, per tensor, and each rank
// combines its piece with those coefficients (adasum_math.h). After log2(size) levels
// every rank holds a distinct piece of the result; the reverse exchanges (an allgather
// by distance halving) give every rank all of it.
//
// Fused tensors are laid out back to back without padding and halved as one buffer, but
// their coefficients are per tensor. Prescale and postscale apply as for Sum. Needs a
// power-of-two number of ranks and a floating-point dtype (checked at submit).
class MpiAdasumAllreduce : public CollectiveOp {
 public:
  MpiAdasumAllreduce(std::shared_ptr<MpiContext> context, std::shared_ptr<Timeline> timeline)
      : context_(std::move(context)), timeline_(std::move(timeline)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.reduce_op == ReduceOp::kAdasum && response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  // Reduces the tensors of `layout`, back to back in `data`, across the ranks.
  Status Reduce(char* data, const adasum::TensorLayout& layout, DataType dtype);
  // One halving level: leaves this rank's combined piece in *window.
  Status ReduceLevel(char* data, const adasum::TensorLayout& layout, DataType dtype, int distance,
                     adasum::Window* window);
  // Sums `dots_` over the 2 * distance ranks that share this rank's bits above `distance`.
  Status SumOverGroup(int distance);

  std::shared_ptr<MpiContext> context_;
  std::shared_ptr<Timeline> timeline_;
  HostBuffer fusion_buffer_;
  HostBuffer received_;
  std::vector<adasum::Dots> dots_;
  std::vector<adasum::Dots> partner_dots_;
};

}  // namespace mpi
}  // namespace horde

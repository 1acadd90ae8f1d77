#pragma once

#include <memory>

#include "core/collective_op.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// A barrier among all ranks. Negotiation already releases it only once every rank has
// submitted it; the MPI barrier makes that an explicit synchronization point as well,
// waited on without spinning.
class MpiBarrier : public CollectiveOp {
 public:
  explicit MpiBarrier(std::shared_ptr<MpiContext> context) : context_(std::move(context)) {}

  bool Enabled(const Response&, const std::vector<TensorEntry>&) const override { return true; }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  std::shared_ptr<MpiContext> context_;
};

}  // namespace mpi
}  // namespace horde

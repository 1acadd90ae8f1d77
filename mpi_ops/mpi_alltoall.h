#pragma once

#include <memory>

#include "core/collective_op.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// Alltoall of host tensors: rank r sends rows [offset_j, offset_j + splits_j) of its
// input to rank j, and its output is what every rank sent it, concatenated in rank
// order. Each tensor takes three steps: the ranks exchange row counts, agree that every
// rank could take part (valid splits, an output allocated, counts MPI can express), and
// only then exchange the rows. A rank that cannot take part fails with its reason and
// the others with an error naming it; none is left waiting in MPI.
class MpiAlltoall : public CollectiveOp {
 public:
  explicit MpiAlltoall(std::shared_ptr<MpiContext> context) : context_(std::move(context)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  Status Exchange(TensorEntry& entry);

  std::shared_ptr<MpiContext> context_;
};

}  // namespace mpi
}  // namespace horde

#pragma once

#include <memory>

#include "core/collective_op.h"
#include "mpi_ops/host_buffer.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/mpi_datatypes.h"

namespace horde {
namespace mpi {

// Allreduce of host tensors with MPI. One tensor is reduced in place in its output;
// several are packed into the persistent fusion buffer at aligned offsets, reduced
// with one call, and copied back out.
class MpiAllreduce : public CollectiveOp {
 public:
  MpiAllreduce(std::shared_ptr<MpiContext> context, std::shared_ptr<MpiDatatypes> types)
      : context_(std::move(context)), types_(std::move(types)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  Status ReduceInPlace(void* data, int64_t count, const Response& response);

  std::shared_ptr<MpiContext> context_;
  std::shared_ptr<MpiDatatypes> types_;
  HostBuffer fusion_buffer_;
};

}  // namespace mpi
}  // namespace horde

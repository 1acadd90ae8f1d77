#pragma once

#include <memory>

#include "core/collective_op.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// Broadcast of host tensors from the response's root, in place in each output.
class MpiBroadcast : public CollectiveOp {
 public:
  explicit MpiBroadcast(std::shared_ptr<MpiContext> context) : context_(std::move(context)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>&) const override {
    return response.device == kCpuDevice;
  }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  std::shared_ptr<MpiContext> context_;
};

}  // namespace mpi
}  // namespace horde

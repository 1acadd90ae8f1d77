#pragma once

#include <memory>

#include "core/transport.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// Negotiation traffic over the runtime's private world communicator, with non-blocking
// collectives completed by WaitPolling.
class MpiTransport : public Transport {
 public:
  explicit MpiTransport(std::shared_ptr<MpiContext> context) : context_(std::move(context)) {}

  int rank() const override { return context_->topology().rank; }
  int size() const override { return context_->topology().size; }
  Status GatherToCoordinator(const std::string& mine, std::vector<std::string>* all) override;
  Status BroadcastFromCoordinator(std::string* blob) override;
  Status AllreduceAnd(std::vector<uint64_t>* words) override;

 private:
  std::shared_ptr<MpiContext> context_;
};

}  // namespace mpi
}  // namespace horde

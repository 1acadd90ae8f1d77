#pragma once

#include <memory>

#include "core/response.h"
#include "mpi_ops/fusion_copier.h"
#include "mpi_ops/host_buffer.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// The persistent fusion buffer of the host allreduces, shared by the ops that reduce
// fused responses (MPI's and the spanning trees'), so it is held once. Growth beyond what
// every rank has held is agreed: a rank that cannot grow it fails the op on every rank.
// Used by the background thread only.
class FusionBuffer {
 public:
  // `allocate` backs the buffer (tests inject failures).
  explicit FusionBuffer(std::shared_ptr<MpiContext> context,
                        HostAllocator allocate = AlignedAllocate)
      : context_(std::move(context)), buffer_(std::move(allocate)) {}

  // Points `copier` (laid out for `response`) at the buffer, grown if needed.
  Status Bind(FusionCopier* copier, const Response& response);

 private:
  std::shared_ptr<MpiContext> context_;
  HostBuffer buffer_;
  int64_t agreed_bytes_ = 0;  // the largest fused size every rank has held
};

}  // namespace mpi
}  // namespace horde

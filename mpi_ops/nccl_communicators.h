#pragma once

#include <nccl.h>

#include <map>
#include <memory>
#include <string>

#include "core/status.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// One runtime's (= one process set's) NCCL communicators, one per GPU this rank uses,
// created lazily: rank 0 makes a unique id and broadcasts it over the runtime's MPI
// communicator. Every rank executes responses in the same order, so all ranks reach the
// first operation on a device set together. One GPU per rank: two ranks on one GPU
// need HORDE_GPU_OPERATIONS=MPI.
class NcclCommunicators {
 public:
  explicit NcclCommunicators(std::shared_ptr<MpiContext> context) : context_(std::move(context)) {}
  ~NcclCommunicators();
  NcclCommunicators(const NcclCommunicators&) = delete;
  NcclCommunicators& operator=(const NcclCommunicators&) = delete;

  // The communicator over all of the runtime's ranks for `device` (made current by the
  // caller); `what` names the op in errors.
  Status Get(int device, const std::string& what, ncclComm_t* comm);
  // The same over `comm`'s ranks (e.g. a node's), keyed by `key`.
  Status GetOver(MPI_Comm comm, const std::string& key, int device, const std::string& what,
                 ncclComm_t* out);

  const MpiContext& mpi() const { return *context_; }

 private:
  std::shared_ptr<MpiContext> context_;
  std::map<std::string, ncclComm_t> comms_;
};

}  // namespace mpi
}  // namespace horde

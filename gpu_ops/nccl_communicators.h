#pragma once

#include <nccl.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "horde/status.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace gpu {

// One runtime's (= one process set's) NCCL communicators, one per GPU this rank uses,
// created lazily: rank 0 makes a unique id and broadcasts it over the runtime's MPI
// communicator. Every rank executes responses in the same order, so all ranks reach the
// first operation on a device set together. One GPU per rank: two ranks on one GPU
// need HORDE_GPU_OPERATIONS=MPI.
//
// A communicator that reports an asynchronous error (a peer died, the network failed)
// is aborted, which stops its kernels so nothing waits on them forever; every later
// operation on it fails with the error that broke it.
class NcclCommunicators {
 public:
  explicit NcclCommunicators(std::shared_ptr<mpi::MpiContext> context)
      : context_(std::move(context)) {}
  ~NcclCommunicators();
  NcclCommunicators(const NcclCommunicators&) = delete;
  NcclCommunicators& operator=(const NcclCommunicators&) = delete;

  // Held by an op from its first communicator lookup until its work is enqueued and
  // handed to the finalizer, so that Abort cannot free a communicator in between.
  [[nodiscard]] std::unique_lock<std::mutex> Enqueueing() {
    return std::unique_lock<std::mutex>(enqueue_mu_);
  }

  // The communicator over all of the runtime's ranks for `device` (made current by the
  // caller); `what` names the op in errors. Caller holds Enqueueing().
  Status Get(int device, const std::string& what, ncclComm_t* comm);
  // The same over `comm`'s ranks (e.g. a node's), keyed by `key`.
  Status GetOver(MPI_Comm comm, const std::string& key, int device, const std::string& what,
                 ncclComm_t* out);

  // The communicator's asynchronous error as text, empty while it is healthy.
  static std::string AsyncError(ncclComm_t comm);
  // Why `comm` must be aborted: the failure marked by MarkFailed, else its asynchronous
  // error; empty while it is healthy. What waits on the device watches this.
  std::string Broken(ncclComm_t comm) const;
  // The runtime is torn down because a rank failed: from now on every communicator is
  // Broken with `reason`, so that what waits on one aborts it instead of waiting on a
  // peer that may be gone. Any thread; no lock needed.
  void MarkFailed(const std::string& reason);
  // The communicators not aborted yet. Caller holds Enqueueing().
  std::vector<ncclComm_t> Live() const;
  // Aborts `comm` (a live one) because of `reason`. Caller holds Enqueueing().
  void Abort(ncclComm_t comm, const std::string& reason);

 private:
  struct Entry {
    ncclComm_t comm = nullptr;  // null once aborted
    std::string broken;         // why it was aborted
  };

  std::shared_ptr<mpi::MpiContext> context_;
  std::mutex enqueue_mu_;
  std::map<std::string, Entry> comms_;  // guarded by enqueue_mu_
  std::atomic<bool> failed_{false};
  std::string failure_;  // written once, before failed_ is set
};

}  // namespace gpu
}  // namespace horde

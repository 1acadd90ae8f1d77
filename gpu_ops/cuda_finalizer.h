#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <condition_variable>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "gpu_ops/nccl_communicators.h"

namespace horde {
namespace gpu {

// Completes GPU operations without the background loop waiting for the device: an op
// enqueues its work on the runtime stream and hands its entries here; this thread polls
// an event recorded after that work and only then runs the entries' callbacks (so a
// handle is done exactly when the output's values are on the device). The entries'
// tensors are kept alive until then, which is what keeps the framework's allocator
// from reusing their memory while the runtime stream still works on it.
//
// While it waits it also watches each operation's NCCL communicator: on an asynchronous
// error it aborts the communicator (ending the stuck kernels) and fails the operations
// that used it with NCCL's text, instead of waiting forever.
class CudaFinalizer {
 public:
  explicit CudaFinalizer(NcclCommunicators& comms);
  // Waits for everything handed over so far, then stops.
  ~CudaFinalizer();
  CudaFinalizer(const CudaFinalizer&) = delete;
  CudaFinalizer& operator=(const CudaFinalizer&) = delete;

  // Records an event on `stream` (of `device`, current) and takes over the entries'
  // callbacks, leaving no-ops for the runtime to call; `comm` (may be null) is the
  // communicator the work used; `what` names the op in errors. A failed `enqueued` (the
  // op stopped halfway) still waits for what was queued before failing the entries, so
  // their memory is not released under the stream.
  Status CompleteAfter(std::vector<TensorEntry>& entries, int device, cudaStream_t stream,
                       ncclComm_t comm, const std::string& what,
                       const Status& enqueued = Status::Ok());
  // Marks the pending operations on `comm` as failed by `error` and stops watching
  // `comm`; returns how many there were. To be called, under the communicators'
  // Enqueueing() lock, just before aborting `comm`.
  size_t FailPendingOn(ncclComm_t comm, const std::string& error);

 private:
  struct Pending {
    int device;
    cudaEvent_t event;
    ncclComm_t comm;
    std::string what;
    std::vector<TensorEntry> entries;
    Status failure;  // not ok when its enqueueing or its communicator failed
  };
  struct BrokenComm {
    ncclComm_t comm;
    std::string error;
  };
  void Loop();
  // Moves the operations whose event has completed from pending_ to the result.
  std::list<Pending> TakeCompleted();
  // The communicators of still-pending operations that report an asynchronous error.
  std::vector<BrokenComm> FindBrokenComms() const;
  // Runs the callbacks of completed operations.
  static void Finish(std::list<Pending>& done);

  NcclCommunicators& comms_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::list<Pending> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpu
}  // namespace horde

#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/tensor.h"

namespace horde {
namespace mpi {

// Completes GPU operations without the background loop waiting for the device: an op
// enqueues its work on the runtime stream and hands its entries here; this thread polls
// an event recorded after that work and only then runs the entries' callbacks (so a
// handle is done exactly when the output's values are on the device). The entries'
// tensors are kept alive until then.
class CudaFinalizer {
 public:
  CudaFinalizer();
  // Waits for everything handed over so far, then stops.
  ~CudaFinalizer();
  CudaFinalizer(const CudaFinalizer&) = delete;
  CudaFinalizer& operator=(const CudaFinalizer&) = delete;

  // Records an event on `stream` and takes over the entries' callbacks (leaving no-ops
  // for the runtime to call); `what` names the op in errors.
  Status CompleteAfter(std::vector<TensorEntry>& entries, cudaStream_t stream, const std::string& what);

 private:
  struct Pending {
    cudaEvent_t event;
    std::string what;
    std::vector<TensorEntry> entries;
  };
  void Loop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::list<Pending> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mpi
}  // namespace horde

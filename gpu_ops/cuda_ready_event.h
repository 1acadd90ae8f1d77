#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "core/ready_event.h"
#include "horde/status.h"

namespace horde {
namespace gpu {

// A CUDA event recorded on the framework's stream when a tensor was submitted; the
// runtime's stream waits on it with cudaStreamWaitEvent instead of the host waiting.
class CudaReadyEvent : public ReadyEvent {
 public:
  // Records a new event on `stream` of `device`, which the caller has made current (a
  // framework's default stream is the null handle: the current device's).
  static Status Record(int device, cudaStream_t stream, std::shared_ptr<ReadyEvent>* out);
  ~CudaReadyEvent() override;
  CudaReadyEvent(const CudaReadyEvent&) = delete;
  CudaReadyEvent& operator=(const CudaReadyEvent&) = delete;

  bool Ready() override { return cudaEventQuery(event_) == cudaSuccess; }
  cudaEvent_t event() const { return event_; }

 private:
  explicit CudaReadyEvent(cudaEvent_t event) : event_(event) {}
  cudaEvent_t event_;
};

}  // namespace gpu
}  // namespace horde

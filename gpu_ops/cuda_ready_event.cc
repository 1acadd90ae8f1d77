#include "gpu_ops/cuda_ready_event.h"

#include <string>

#include "gpu_ops/cuda_check.h"

namespace horde {
namespace gpu {

Status CudaReadyEvent::Record(int device, cudaStream_t stream, std::shared_ptr<ReadyEvent>* out) {
  const std::string what = "ready event on cuda:" + std::to_string(device);
  cudaEvent_t event;
  HORDE_RETURN_IF_ERROR(CheckCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                                  "cudaEventCreateWithFlags", what));
  // Owned from here on, so a failed record still destroys it.
  std::shared_ptr<CudaReadyEvent> ready(new CudaReadyEvent(event));
  HORDE_RETURN_IF_ERROR(CheckCuda(cudaEventRecord(event, stream), "cudaEventRecord", what));
  *out = std::move(ready);
  return Status::Ok();
}

CudaReadyEvent::~CudaReadyEvent() { cudaEventDestroy(event_); }

}  // namespace gpu
}  // namespace horde

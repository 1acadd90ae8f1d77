#include "torch_plugin/cuda_ready_event.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "gpu_ops/cuda_ready_event.h"

namespace horde {

Status RecordReadyEvent(const at::Tensor& tensor, std::shared_ptr<ReadyEvent>* event) {
  event->reset();
  if (!tensor.is_cuda()) return Status::Ok();
  const c10::DeviceIndex device = tensor.device().index();
  // The event and the stream must belong to the tensor's device, whatever device the
  // calling thread has current; torch's guard restores it without creating contexts.
  const c10::cuda::CUDAGuard guard(device);
  return gpu::CudaReadyEvent::Record(device, c10::cuda::getCurrentCUDAStream(device).stream(),
                                     event);
}

}  // namespace horde

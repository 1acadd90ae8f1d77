#include "torch_plugin/cuda_ready_event.h"

#include <c10/cuda/CUDAStream.h>

#include "mpi_ops/cuda_ready_event.h"

namespace horde {

Status RecordReadyEvent(const at::Tensor& tensor, std::shared_ptr<ReadyEvent>* event) {
  event->reset();
  if (!tensor.is_cuda()) return Status::Ok();
  const c10::DeviceIndex device = tensor.device().index();
  return mpi::CudaReadyEvent::Record(device, c10::cuda::getCurrentCUDAStream(device).stream(), event);
}

}  // namespace horde

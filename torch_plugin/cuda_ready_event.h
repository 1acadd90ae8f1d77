#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

#include "core/ready_event.h"
#include "horde/status.h"

namespace horde {

// For a tensor on a GPU: an event recorded on the device's current torch stream, for the
// tensor's entry (TensorEntry::ready_event), so the runtime's stream starts on it only
// after the kernels that wrote it. Null for host tensors, and in builds whose torch has
// no CUDA (cuda_ready_event_none.cc), where GPU tensors order after the legacy stream.
Status RecordReadyEvent(const at::Tensor& tensor, std::shared_ptr<ReadyEvent>* event);

}  // namespace horde

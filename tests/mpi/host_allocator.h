#pragma once

#include <memory>

#include "core/host_tensor.h"

namespace horde {
namespace testing {

// Allocates the outputs of operations whose shape negotiation decides (allgather).
inline OutputAllocator HostAllocator(DataType dtype) {
  return [dtype](const TensorShape& shape, std::shared_ptr<Tensor>* out) {
    *out = std::make_shared<HostTensor>(dtype, shape);
    return Status::Ok();
  };
}

}  // namespace testing
}  // namespace horde

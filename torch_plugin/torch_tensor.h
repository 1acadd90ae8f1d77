#pragma once

#include <ATen/core/Tensor.h>

#include "core/tensor.h"

namespace horde {

// An at::Tensor seen through core's Tensor interface. The tensor must be contiguous.
class TorchTensor : public Tensor {
 public:
  explicit TorchTensor(at::Tensor tensor) : tensor_(std::move(tensor)) {}

  DataType dtype() const override;
  TensorShape shape() const override;
  int32_t device() const override;
  int64_t num_elements() const override { return tensor_.numel(); }
  void* data() override { return tensor_.data_ptr(); }

  const at::Tensor& tensor() const { return tensor_; }
  // Points this view at another tensor (undefined: none), for a caller that reuses one
  // view step after step; only while no one else holds it.
  void Rebind(at::Tensor tensor) { tensor_ = std::move(tensor); }

 private:
  at::Tensor tensor_;
};

// The horde dtype of a torch scalar type; InvalidArgument naming it if horde has none.
Status ToHordeType(at::ScalarType type, DataType* dtype);

// Allocates outputs like `prototype` (its dtype and device) for operations whose output
// shape is decided by negotiation.
OutputAllocator TorchOutputAllocator(const at::Tensor& prototype);
// Hands out `landing` itself (contiguous, of the input's dtype and device) for an
// operation whose result must land there; a result of another shape is an error.
OutputAllocator LandingAllocator(const at::Tensor& landing);

}  // namespace horde

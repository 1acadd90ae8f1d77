#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"

namespace horde {
namespace testing {

// A host tensor backed by a byte vector: what the MPI tests hand the runtime instead
// of a framework tensor.
class HostTensor : public Tensor {
 public:
  HostTensor(DataType dtype, TensorShape shape)
      : dtype_(dtype), shape_(std::move(shape)), bytes_(NumElements(shape_) * DataTypeSize(dtype)) {}

  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  int32_t device() const override { return kCpuDevice; }
  void* data() override { return bytes_.data(); }

  template <typename T>
  T* as() { return reinterpret_cast<T*>(bytes_.data()); }

 private:
  DataType dtype_;
  TensorShape shape_;
  std::vector<char> bytes_;
};

inline OutputAllocator HostAllocator(DataType dtype) {
  return [dtype](const TensorShape& shape, std::shared_ptr<Tensor>* out) {
    *out = std::make_shared<HostTensor>(dtype, shape);
    return Status::Ok();
  };
}

}  // namespace testing
}  // namespace horde

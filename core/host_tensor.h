#pragma once

#include <vector>

#include "core/tensor.h"

namespace horde {

// A zero-filled tensor in host memory: what a joined rank contributes to an allreduce
// it holds no tensor for (and what tests hand the runtime instead of a framework tensor).
class HostTensor : public Tensor {
 public:
  HostTensor(DataType dtype, TensorShape shape)
      : dtype_(dtype),
        shape_(std::move(shape)),
        bytes_(NumElements(shape_) * DataTypeSize(dtype)) {}

  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  int32_t device() const override { return kCpuDevice; }
  void* data() override { return bytes_.data(); }

  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(bytes_.data());
  }

 private:
  DataType dtype_;
  TensorShape shape_;
  std::vector<char> bytes_;
};

}  // namespace horde

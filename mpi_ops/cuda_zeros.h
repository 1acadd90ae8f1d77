#pragma once

#include <memory>

#include "core/status.h"
#include "core/tensor.h"

namespace horde {
namespace mpi {

// A zero-filled tensor in device memory that horde owns: what a joined rank contributes
// to a GPU allreduce, so that it runs the same NCCL collective as the other ranks.
class CudaZeros : public Tensor {
 public:
  static Status Create(DataType dtype, const TensorShape& shape, int32_t device, std::shared_ptr<Tensor>* out);
  ~CudaZeros() override;
  CudaZeros(const CudaZeros&) = delete;
  CudaZeros& operator=(const CudaZeros&) = delete;

  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  int32_t device() const override { return device_; }
  void* data() override { return data_; }

 private:
  CudaZeros(DataType dtype, TensorShape shape, int32_t device)
      : dtype_(dtype), shape_(std::move(shape)), device_(device) {}

  DataType dtype_;
  TensorShape shape_;
  int32_t device_;
  void* data_ = nullptr;
};

}  // namespace mpi
}  // namespace horde

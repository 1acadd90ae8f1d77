#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "core/tensor.h"
#include "horde/status.h"

namespace horde {
namespace gpu {

// A tensor in device memory that horde owns, filled with the identity of a reduce op
// (core/reduce_identity.h): what a joined rank contributes to a GPU allreduce, so that
// it runs the same NCCL collective as the other ranks without changing their result.
// Allocated, filled and freed in the order of `stream` (the runtime's stream of the
// device), so neither end synchronizes the device.
class CudaIdentity : public Tensor {
 public:
  static Status Create(DataType dtype, ReduceOp op, const TensorShape& shape, int32_t device,
                       cudaStream_t stream, std::shared_ptr<Tensor>* out);
  ~CudaIdentity() override;
  CudaIdentity(const CudaIdentity&) = delete;
  CudaIdentity& operator=(const CudaIdentity&) = delete;

  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  int32_t device() const override { return device_; }
  void* data() override { return data_; }

 private:
  CudaIdentity(DataType dtype, TensorShape shape, int32_t device, cudaStream_t stream)
      : dtype_(dtype), shape_(std::move(shape)), device_(device), stream_(stream) {}

  DataType dtype_;
  TensorShape shape_;
  int32_t device_;
  cudaStream_t stream_;
  void* data_ = nullptr;
};

}  // namespace gpu
}  // namespace horde

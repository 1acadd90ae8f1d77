#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "core/status.h"
#include "core/tensor.h"

namespace horde {
namespace mpi {

// A zero-filled tensor in device memory that horde owns: what a joined rank contributes
// to a GPU allreduce, so that it runs the same NCCL collective as the other ranks.
// Allocated, zeroed and freed in the order of `stream` (the runtime's stream of the
// device), so neither end synchronizes the device.
class CudaZeros : public Tensor {
 public:
  static Status Create(DataType dtype, const TensorShape& shape, int32_t device, cudaStream_t stream,
                       std::shared_ptr<Tensor>* out);
  ~CudaZeros() override;
  CudaZeros(const CudaZeros&) = delete;
  CudaZeros& operator=(const CudaZeros&) = delete;

  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  int32_t device() const override { return device_; }
  void* data() override { return data_; }

 private:
  CudaZeros(DataType dtype, TensorShape shape, int32_t device, cudaStream_t stream)
      : dtype_(dtype), shape_(std::move(shape)), device_(device), stream_(stream) {}

  DataType dtype_;
  TensorShape shape_;
  int32_t device_;
  cudaStream_t stream_;
  void* data_ = nullptr;
};

}  // namespace mpi
}  // namespace horde

#include "mpi_ops/cuda_zeros.h"

#include "mpi_ops/cuda_check.h"

namespace horde {
namespace mpi {

Status CudaZeros::Create(DataType dtype, const TensorShape& shape, int32_t device, cudaStream_t stream,
                         std::shared_ptr<Tensor>* out) {
  const std::string what = "zeros of a joined rank on cuda:" + std::to_string(device);
  std::shared_ptr<CudaZeros> zeros(new CudaZeros(dtype, shape, device, stream));
  const int64_t bytes = zeros->size_bytes();
  if (bytes > 0) {
    HORDE_RETURN_IF_ERROR(CheckCuda(cudaMallocAsync(&zeros->data_, bytes, stream), "cudaMallocAsync", what));
    HORDE_RETURN_IF_ERROR(CheckCuda(cudaMemsetAsync(zeros->data_, 0, bytes, stream), "cudaMemsetAsync", what));
  }
  *out = std::move(zeros);
  return Status::Ok();
}

CudaZeros::~CudaZeros() {
  // After the collective that used it: the finalizer keeps the entry, and so this
  // tensor, until that work is done, and the free is ordered on the same stream anyway.
  if (data_ != nullptr) cudaFreeAsync(data_, stream_);
}

}  // namespace mpi
}  // namespace horde

#include "mpi_ops/cuda_zeros.h"

#include <cuda_runtime_api.h>

#include "mpi_ops/cuda_check.h"

namespace horde {
namespace mpi {

Status CudaZeros::Create(DataType dtype, const TensorShape& shape, int32_t device, std::shared_ptr<Tensor>* out) {
  const std::string what = "zeros of a joined rank on cuda:" + std::to_string(device);
  std::shared_ptr<CudaZeros> zeros(new CudaZeros(dtype, shape, device));
  const int64_t bytes = zeros->size_bytes();
  HORDE_RETURN_IF_ERROR(CheckCuda(cudaSetDevice(device), "cudaSetDevice", what));
  if (bytes > 0) {
    HORDE_RETURN_IF_ERROR(CheckCuda(cudaMalloc(&zeros->data_, bytes), "cudaMalloc", what));
    // Waited for here, so the runtime stream needs no ordering after it (a joined rank
    // has nothing else to do); cudaMemset runs on the legacy default stream.
    HORDE_RETURN_IF_ERROR(CheckCuda(cudaMemset(zeros->data_, 0, bytes), "cudaMemset", what));
    HORDE_RETURN_IF_ERROR(CheckCuda(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize", what));
  }
  *out = std::move(zeros);
  return Status::Ok();
}

CudaZeros::~CudaZeros() {
  // The finalizer keeps the entry, and so this tensor, until the work using it is done.
  if (data_ != nullptr) cudaFree(data_);
}

}  // namespace mpi
}  // namespace horde

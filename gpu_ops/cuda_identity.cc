#include "gpu_ops/cuda_identity.h"

#include "core/reduce_identity.h"
#include "gpu_ops/cuda_check.h"
#include "gpu_ops/cuda_kernels.h"

namespace horde {
namespace gpu {

Status CudaIdentity::Create(DataType dtype, ReduceOp op, const TensorShape& shape, int32_t device,
                            cudaStream_t stream, std::shared_ptr<Tensor>* out) {
  const std::string what = "the identity a joined rank contributes, on cuda:" +
                           std::to_string(device);
  std::shared_ptr<CudaIdentity> identity(new CudaIdentity(dtype, shape, device, stream));
  const int64_t bytes = identity->size_bytes();
  if (bytes > 0) {
    HORDE_RETURN_IF_ERROR(
        CheckCuda(cudaMallocAsync(&identity->data_, bytes, stream), "cudaMallocAsync", what));
    HORDE_RETURN_IF_ERROR(CheckCuda(
        FillDeviceBuffer(identity->data_, NumElements(shape), IdentityOf(dtype, op), stream),
        "identity fill", what));
  }
  *out = std::move(identity);
  return Status::Ok();
}

CudaIdentity::~CudaIdentity() {
  // After the collective that used it: the finalizer keeps the entry, and so this
  // tensor, until that work is done, and the free is ordered on the same stream anyway.
  if (data_ != nullptr) cudaFreeAsync(data_, stream_);
}

}  // namespace gpu
}  // namespace horde

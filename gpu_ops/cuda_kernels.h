#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/reduce_identity.h"
#include "horde/data_type.h"
#include "mpi_ops/postscale.h"

namespace horde {
namespace gpu {

// One device-to-device copy of a batch.
struct CopySpan {
  const void* source;
  void* destination;
  int64_t bytes;
};

// Enqueues all the copies on `stream` with one kernel launch per 128 spans (the spans
// travel as kernel parameters, so no descriptor upload and no host synchronization).
// Fusing 200 small gradients thus costs two launches instead of 200 cudaMemcpyAsync.
cudaError_t BatchedDeviceCopy(const std::vector<CopySpan>& spans, cudaStream_t stream);

// data[i] *= factor for `count` elements of `dtype` in device memory, on `stream`. As
// host_scale.h: integers through double, truncated toward zero and clamped to the
// dtype's range; float16/bfloat16 through float.
cudaError_t ScaleDeviceBuffer(void* data, int64_t count, DataType dtype, double factor,
                              cudaStream_t stream);

// Fills `count` elements of device memory at `data` with `element`, on `stream`.
cudaError_t FillDeviceBuffer(void* data, int64_t count, const IdentityElement& element,
                             cudaStream_t stream);

// Applies `postscale` to `count` reduced elements on `stream`: integers are divided
// exactly, then scaled (see mpi_ops/postscale.h).
cudaError_t PostscaleDeviceBuffer(void* data, int64_t count, DataType dtype,
                                  const Postscale& postscale, cudaStream_t stream);

}  // namespace gpu
}  // namespace horde

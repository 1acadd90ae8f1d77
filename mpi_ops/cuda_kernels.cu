#include "mpi_ops/cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace horde {
namespace mpi {
namespace {

constexpr int kSpansPerLaunch = 128;  // 128 * 24 bytes stays under the 4 KiB parameter limit
constexpr int kThreads = 256;
constexpr int kMaxBlocksPerSpan = 64;

struct SpanBatch {
  CopySpan spans[kSpansPerLaunch];
};

// Block (x, s) copies part of span s: 16-byte words when both ends are aligned, bytes
// otherwise (and for the tail).
__global__ void CopySpans(SpanBatch batch) {
  const CopySpan span = batch.spans[blockIdx.y];
  const char* source = static_cast<const char*>(span.source);
  char* destination = static_cast<char*>(span.destination);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  const bool aligned = ((reinterpret_cast<uintptr_t>(source) | reinterpret_cast<uintptr_t>(destination)) & 15) == 0;
  if (aligned) {
    const int64_t words = span.bytes / 16;
    const int4* from = reinterpret_cast<const int4*>(source);
    int4* to = reinterpret_cast<int4*>(destination);
    for (int64_t i = first; i < words; i += stride) to[i] = from[i];
    done = words * 16;
  }
  for (int64_t i = done + first; i < span.bytes; i += stride) destination[i] = source[i];
}

template <typename T>
__global__ void Scale(T* data, int64_t count, double factor) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = static_cast<T>(static_cast<double>(data[i]) * factor);
  }
}

template <>
__global__ void Scale<float>(float* data, int64_t count, double factor) {
  const float f = static_cast<float>(factor);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) data[i] *= f;
}

template <>
__global__ void Scale<__half>(__half* data, int64_t count, double factor) {
  const float f = static_cast<float>(factor);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = __float2half(__half2float(data[i]) * f);
  }
}

template <>
__global__ void Scale<__nv_bfloat16>(__nv_bfloat16* data, int64_t count, double factor) {
  const float f = static_cast<float>(factor);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = __float2bfloat16(__bfloat162float(data[i]) * f);
  }
}

int BlocksFor(int64_t count) {
  return static_cast<int>(std::min<int64_t>((count + kThreads - 1) / kThreads, 4096));
}

// Clears the thread's last error, so the check after a launch reports that launch and
// not an earlier call (a cudaStreamQuery's "not ready", say).
void ClearLastError() { static_cast<void>(cudaGetLastError()); }

template <typename T>
cudaError_t LaunchScale(void* data, int64_t count, double factor, cudaStream_t stream) {
  ClearLastError();
  Scale<T><<<BlocksFor(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, factor);
  return cudaGetLastError();
}

}  // namespace

cudaError_t BatchedDeviceCopy(const std::vector<CopySpan>& spans, cudaStream_t stream) {
  for (size_t begin = 0; begin < spans.size(); begin += kSpansPerLaunch) {
    SpanBatch batch;
    const int n = static_cast<int>(std::min<size_t>(kSpansPerLaunch, spans.size() - begin));
    int64_t largest = 0;
    for (int i = 0; i < n; ++i) {
      batch.spans[i] = spans[begin + i];
      largest = std::max(largest, batch.spans[i].bytes);
    }
    if (largest == 0) continue;
    const int blocks = static_cast<int>(std::min<int64_t>((largest / 16 + kThreads - 1) / kThreads + 1, kMaxBlocksPerSpan));
    ClearLastError();
    CopySpans<<<dim3(blocks, n), kThreads, 0, stream>>>(batch);
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) return launched;
  }
  return cudaSuccess;
}

cudaError_t ScaleDeviceBuffer(void* data, int64_t count, DataType dtype, double factor,
                              cudaStream_t stream) {
  if (count == 0 || factor == 1.0) return cudaSuccess;
  switch (dtype) {
    case DataType::kUInt8: return LaunchScale<uint8_t>(data, count, factor, stream);
    case DataType::kInt8: return LaunchScale<int8_t>(data, count, factor, stream);
    case DataType::kInt16: return LaunchScale<int16_t>(data, count, factor, stream);
    case DataType::kInt32: return LaunchScale<int32_t>(data, count, factor, stream);
    case DataType::kInt64: return LaunchScale<int64_t>(data, count, factor, stream);
    case DataType::kFloat16: return LaunchScale<__half>(data, count, factor, stream);
    case DataType::kBFloat16: return LaunchScale<__nv_bfloat16>(data, count, factor, stream);
    case DataType::kFloat32: return LaunchScale<float>(data, count, factor, stream);
    case DataType::kFloat64: return LaunchScale<double>(data, count, factor, stream);
    case DataType::kBool: return cudaSuccess;  // rejected at submit; never scaled
  }
  return cudaErrorInvalidValue;
}

}  // namespace mpi
}  // namespace horde

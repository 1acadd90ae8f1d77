#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "gpu_ops/cuda_kernels.h"

namespace horde {
namespace gpu {
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
  const bool aligned =
      ((reinterpret_cast<uintptr_t>(source) | reinterpret_cast<uintptr_t>(destination)) & 15) == 0;
  if (aligned) {
    const int64_t words = span.bytes / 16;
    const int4* from = reinterpret_cast<const int4*>(source);
    int4* to = reinterpret_cast<int4*>(destination);
    for (int64_t i = first; i < words; i += stride) to[i] = from[i];
    done = words * 16;
  }
  for (int64_t i = done + first; i < span.bytes; i += stride) destination[i] = source[i];
}

// An integer type's range, taken on the host (std::numeric_limits is host code).
template <typename T>
struct Range {
  T lowest = std::numeric_limits<T>::lowest();
  T highest = std::numeric_limits<T>::max();
};

// `value` truncated toward zero into the integer type T, clamped to `range` (NaN: 0),
// as mpi_ops/host_scale.cc does on the host.
template <typename T>
__device__ T Clamped(double value, Range<T> range) {
  if (isnan(value)) return 0;
  if (value <= static_cast<double>(range.lowest)) return range.lowest;
  if (value >= static_cast<double>(range.highest)) return range.highest;
  return static_cast<T>(value);
}

template <typename T>
__global__ void Scale(T* data, int64_t count, double factor, Range<T> range) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = Clamped<T>(static_cast<double>(data[i]) * factor, range);
  }
}

// Floating types need no clamp (out of range is infinity); `Range` is unused for them.
template <typename T>
__global__ void ScaleFloat(T* data, int64_t count, double factor);

template <>
__global__ void ScaleFloat<double>(double* data, int64_t count, double factor) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] *= factor;
  }
}

// An integer Average's exact division (in int64: the divisor need not fit in T).
template <typename T>
__global__ void Divide(T* data, int64_t count, int64_t divisor) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = static_cast<T>(static_cast<int64_t>(data[i]) / divisor);
  }
}

template <>
__global__ void ScaleFloat<float>(float* data, int64_t count, double factor) {
  const float f = static_cast<float>(factor);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    data[i] *= f;
}

template <>
__global__ void ScaleFloat<__half>(__half* data, int64_t count, double factor) {
  const float f = static_cast<float>(factor);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = __float2half(__half2float(data[i]) * f);
  }
}

template <>
__global__ void ScaleFloat<__nv_bfloat16>(__nv_bfloat16* data, int64_t count, double factor) {
  const float f = static_cast<float>(factor);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = __float2bfloat16(__bfloat162float(data[i]) * f);
  }
}

// Elements of 1, 2, 4 or 8 bytes, each set to `value`'s low bytes.
template <typename T>
__global__ void Fill(T* data, int64_t count, T value) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    data[i] = value;
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
  Scale<T>
      <<<BlocksFor(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, factor, Range<T>());
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchScaleFloat(void* data, int64_t count, double factor, cudaStream_t stream) {
  ClearLastError();
  ScaleFloat<T><<<BlocksFor(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, factor);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchDivide(void* data, int64_t count, int64_t divisor, cudaStream_t stream) {
  ClearLastError();
  Divide<T><<<BlocksFor(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, divisor);
  return cudaGetLastError();
}

cudaError_t DivideIntegers(void* data, int64_t count, DataType dtype, int64_t divisor,
                           cudaStream_t stream) {
  switch (dtype) {
    case DataType::kUInt8: return LaunchDivide<uint8_t>(data, count, divisor, stream);
    case DataType::kInt8: return LaunchDivide<int8_t>(data, count, divisor, stream);
    case DataType::kInt16: return LaunchDivide<int16_t>(data, count, divisor, stream);
    case DataType::kInt32: return LaunchDivide<int32_t>(data, count, divisor, stream);
    case DataType::kInt64: return LaunchDivide<int64_t>(data, count, divisor, stream);
    default: return cudaErrorInvalidValue;  // floating types fold the divisor into the factor
  }
}

template <typename T>
cudaError_t LaunchFill(void* data, int64_t count, const IdentityElement& element,
                       cudaStream_t stream) {
  T value;
  std::memcpy(&value, element.bytes.data(), sizeof(T));
  ClearLastError();
  Fill<T><<<BlocksFor(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, value);
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
    const int blocks = static_cast<int>(
        std::min<int64_t>((largest / 16 + kThreads - 1) / kThreads + 1, kMaxBlocksPerSpan));
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
    case DataType::kFloat16: return LaunchScaleFloat<__half>(data, count, factor, stream);
    case DataType::kBFloat16: return LaunchScaleFloat<__nv_bfloat16>(data, count, factor, stream);
    case DataType::kFloat32: return LaunchScaleFloat<float>(data, count, factor, stream);
    case DataType::kFloat64: return LaunchScaleFloat<double>(data, count, factor, stream);
    case DataType::kBool: return cudaSuccess;  // rejected at submit; never scaled
  }
  return cudaErrorInvalidValue;
}

cudaError_t FillDeviceBuffer(void* data, int64_t count, const IdentityElement& element,
                             cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (element.zero())
    return cudaMemsetAsync(data, 0, static_cast<size_t>(count * element.size), stream);
  switch (element.size) {
    case 1: return LaunchFill<uint8_t>(data, count, element, stream);
    case 2: return LaunchFill<uint16_t>(data, count, element, stream);
    case 4: return LaunchFill<uint32_t>(data, count, element, stream);
    case 8: return LaunchFill<uint64_t>(data, count, element, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t PostscaleDeviceBuffer(void* data, int64_t count, DataType dtype,
                                  const Postscale& postscale, cudaStream_t stream) {
  if (count == 0 || postscale.identity() || dtype == DataType::kBool) return cudaSuccess;
  if (IsFloatingPoint(dtype)) {
    return ScaleDeviceBuffer(data, count, dtype,
                             postscale.factor / static_cast<double>(postscale.divisor), stream);
  }
  if (postscale.divisor != 1) {
    const cudaError_t divided = DivideIntegers(data, count, dtype, postscale.divisor, stream);
    if (divided != cudaSuccess) return divided;
  }
  return ScaleDeviceBuffer(data, count, dtype, postscale.factor, stream);
}

}  // namespace gpu
}  // namespace horde

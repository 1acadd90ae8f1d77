#include "gpu_ops/cuda_devices.h"

#include "gpu_ops/cuda_check.h"
#include "gpu_ops/cuda_ready_event.h"

namespace horde {
namespace gpu {

CudaDevices::~CudaDevices() {
  for (auto& [device, d] : devices_) {
    cudaSetDevice(device);
    if (d.fusion != nullptr) cudaFreeAsync(d.fusion, d.stream);
    cudaStreamSynchronize(d.stream);
    cudaStreamDestroy(d.stream);
  }
}

Status CudaDevices::Stream(int device, cudaStream_t* stream) {
  const std::string what = "runtime stream on cuda:" + std::to_string(device);
  HORDE_RETURN_IF_ERROR(CheckCuda(cudaSetDevice(device), "cudaSetDevice", what));
  auto found = devices_.find(device);
  if (found == devices_.end()) {
    Device created;
    HORDE_RETURN_IF_ERROR(
        CheckCuda(cudaStreamCreateWithFlags(&created.stream, cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags", what));
    found = devices_.emplace(device, created).first;
  }
  *stream = found->second.stream;
  return Status::Ok();
}

Status CudaDevices::FusionBuffer(int device, int64_t bytes, char** buffer) {
  cudaStream_t stream;
  HORDE_RETURN_IF_ERROR(Stream(device, &stream));
  Device& d = devices_[device];
  if (d.fusion_bytes < bytes) {
    const std::string what = "fusion buffer of " + std::to_string(bytes) +
                             " bytes on cuda:" + std::to_string(device);
    char* grown = nullptr;
    HORDE_RETURN_IF_ERROR(CheckCuda(
        cudaMallocAsync(reinterpret_cast<void**>(&grown), bytes, stream), "cudaMallocAsync", what));
    if (d.fusion != nullptr)
      HORDE_RETURN_IF_ERROR(CheckCuda(cudaFreeAsync(d.fusion, stream), "cudaFreeAsync", what));
    d.fusion = grown;
    d.fusion_bytes = bytes;
  }
  *buffer = d.fusion;
  return Status::Ok();
}

Status WaitForInputs(const std::vector<TensorEntry>& entries, cudaStream_t stream,
                     const std::string& what) {
  bool after_legacy = false;
  for (const auto& entry : entries) {
    auto* cuda = dynamic_cast<CudaReadyEvent*>(entry.ready_event.get());
    if (cuda == nullptr) {
      after_legacy = true;
      continue;
    }
    HORDE_RETURN_IF_ERROR(
        CheckCuda(cudaStreamWaitEvent(stream, cuda->event(), 0), "cudaStreamWaitEvent", what));
  }
  return after_legacy ? WaitForLegacyStream(stream, what) : Status::Ok();
}

Status WaitForLegacyStream(cudaStream_t stream, const std::string& what) {
  cudaEvent_t legacy;
  HORDE_RETURN_IF_ERROR(CheckCuda(cudaEventCreateWithFlags(&legacy, cudaEventDisableTiming),
                                  "cudaEventCreateWithFlags", what));
  Status status = CheckCuda(cudaEventRecord(legacy, cudaStreamLegacy), "cudaEventRecord", what);
  if (status.ok())
    status = CheckCuda(cudaStreamWaitEvent(stream, legacy, 0), "cudaStreamWaitEvent", what);
  cudaEventDestroy(legacy);  // released once the wait is satisfied
  return status;
}

}  // namespace gpu
}  // namespace horde

#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "horde/status.h"

namespace horde {
namespace gpu {

// What one runtime owns on each GPU it has seen: a stream of its own (non-blocking, so
// the framework's streams are ordered against it only through ready events) and a
// fusion buffer in device memory. Created on first use; used by the background thread
// only.
class CudaDevices {
 public:
  CudaDevices() = default;
  ~CudaDevices();
  CudaDevices(const CudaDevices&) = delete;
  CudaDevices& operator=(const CudaDevices&) = delete;

  // Makes `device` current on the calling thread and returns its stream.
  Status Stream(int device, cudaStream_t* stream);
  // At least `bytes` of the device's fusion buffer. It grows in stream order on the
  // device's stream (the old one is freed after the work already queued there), so no
  // call here synchronizes the device. On failure the old buffer stays.
  Status FusionBuffer(int device, int64_t bytes, char** buffer);

 private:
  struct Device {
    cudaStream_t stream = nullptr;
    char* fusion = nullptr;
    int64_t fusion_bytes = 0;
  };
  std::map<int, Device> devices_;
};

// Makes `stream` wait, on the device, until every entry's input is final: on its ready
// event when it has one, else after all work queued so far on the legacy default stream
// (what a framework that records no event writes on).
Status WaitForInputs(const std::vector<TensorEntry>& entries, cudaStream_t stream,
                     const std::string& what);

// Makes `stream` wait for all work queued so far on the current device's legacy default
// stream. Needed after the framework allocates an output on the background thread: its
// caching allocator may hand out memory that default-stream kernels still read.
Status WaitForLegacyStream(cudaStream_t stream, const std::string& what);

}  // namespace gpu
}  // namespace horde

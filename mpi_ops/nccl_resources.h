#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/timeline.h"
#include "mpi_ops/cuda_devices.h"
#include "mpi_ops/cuda_finalizer.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/nccl_communicators.h"

namespace horde {
namespace mpi {

// What the GPU ops of one runtime share. Members are destroyed in reverse order: the
// finalizer first (it waits for the work in flight), then the communicators, then the
// streams and buffers that work used.
struct NcclResources {
  NcclResources(std::shared_ptr<MpiContext> context, std::shared_ptr<Timeline> timeline)
      : mpi(context), timeline(std::move(timeline)), comms(std::move(context)), finalizer(comms) {}

  // What every NCCL op does first, holding comms.Enqueueing(): the device's runtime
  // stream, made to wait until the entries' inputs are ready, and the device's communicator.
  Status Begin(const std::vector<TensorEntry>& entries, const std::string& what, cudaStream_t* stream,
               ncclComm_t* comm);
  // Waits on the host until `stream` is done, watching `comm`: on an asynchronous error
  // it aborts the communicator (failing what the finalizer holds on it) and returns the
  // error instead of blocking forever. Caller holds comms.Enqueueing().
  Status WaitForStream(cudaStream_t stream, ncclComm_t comm, const std::string& what);

  std::shared_ptr<MpiContext> mpi;
  std::shared_ptr<Timeline> timeline;
  CudaDevices devices;
  NcclCommunicators comms;
  CudaFinalizer finalizer;
};

}  // namespace mpi
}  // namespace horde

#include "mpi_ops/nccl_resources.h"

#include <chrono>
#include <thread>

#include "mpi_ops/cuda_check.h"

namespace horde {
namespace mpi {

Status NcclResources::Begin(const std::vector<TensorEntry>& entries, const std::string& what,
                            cudaStream_t* stream, ncclComm_t* comm) {
  const int device = entries[0].input->device();
  HORDE_RETURN_IF_ERROR(devices.Stream(device, stream));
  HORDE_RETURN_IF_ERROR(comms.Get(device, what, comm));
  return WaitForInputs(entries, *stream, what);
}

Status NcclResources::WaitForStream(cudaStream_t stream, ncclComm_t comm, const std::string& what) {
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state != cudaErrorNotReady) return CheckCuda(state, "cudaStreamQuery", what);
    const std::string error = NcclCommunicators::AsyncError(comm);
    if (!error.empty()) {
      finalizer.FailPendingOn(comm, error);
      comms.Abort(comm, error);
      return Status::Internal(what + ": " + error);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace mpi
}  // namespace horde

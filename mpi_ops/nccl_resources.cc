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

Status NcclResources::AgreeToLaunch(const Status& local, const std::string& what) {
  int everyone_ok = local.ok() ? 1 : 0;
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Allreduce(MPI_IN_PLACE, &everyone_ok, 1, MPI_INT, MPI_MIN, mpi->world()),
                                 "MPI_Allreduce (agreeing to launch a GPU collective)"));
  HORDE_RETURN_IF_ERROR(local);
  if (!everyone_ok) return Status::PreconditionError(what + ": another rank could not take part");
  return Status::Ok();
}

Status NcclResources::AgreeAfterAllocating(const Status& allocated, cudaStream_t stream, const std::string& what) {
  Status local = allocated;
  if (local.ok()) local = WaitForLegacyStream(stream, what);
  return AgreeToLaunch(local, what);
}

Status NcclResources::FusionBuffer(int device, int64_t bytes, const std::string& what, char** buffer) {
  int64_t& agreed = agreed_fusion_bytes[device];
  if (bytes <= agreed) return devices.FusionBuffer(device, bytes, buffer);
  HORDE_RETURN_IF_ERROR(AgreeToLaunch(devices.FusionBuffer(device, bytes, buffer), what));
  agreed = bytes;
  return Status::Ok();
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

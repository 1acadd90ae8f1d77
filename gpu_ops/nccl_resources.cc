#include "gpu_ops/nccl_resources.h"

#include <chrono>
#include <thread>

#include "core/rank_agreement.h"
#include "gpu_ops/cuda_check.h"
#include "mpi_ops/mpi_transport.h"

namespace horde {
namespace gpu {

NcclResources::NcclResources(std::shared_ptr<mpi::MpiContext> context,
                             std::shared_ptr<Timeline> timeline)
    : mpi(context), timeline(std::move(timeline)), comms(std::move(context)), finalizer(comms) {
  mpi->AddFailureHook(this, [this](const std::string& reason) { AbortForFailure(reason); });
}

NcclResources::~NcclResources() { mpi->RemoveFailureHook(this); }

void NcclResources::AbortForFailure(const std::string& reason) {
  // First, so that an op waiting on its stream with the lock held (WaitForStream) aborts
  // its communicator and lets go of the lock.
  comms.MarkFailed(reason);
  const auto enqueueing = comms.Enqueueing();
  for (ncclComm_t comm : comms.Live()) {
    finalizer.FailPendingOn(comm, reason);
    comms.Abort(comm, reason);
  }
}

Status NcclResources::AgreeOnOneGpu(const std::vector<TensorEntry>& entries,
                                    const std::string& what) {
  if (entries.size() < 2) return Status::Ok();
  Status local;
  const int32_t device = entries[0].input->device();
  for (const auto& entry : entries) {
    if (entry.input->device() == device) continue;
    local = Status::InvalidArgument(what + ": this rank's tensors are on " + DeviceName(device) +
                                    " ('" + entries[0].name + "') and " +
                                    DeviceName(entry.input->device()) + " ('" + entry.name +
                                    "'); horde drives one GPU per rank, so put every tensor of "
                                    "an operation (and of a fused or grouped set) on the same GPU");
    break;
  }
  return AgreeToLaunch(local, what);
}

Status NcclResources::AgreeToLaunch(const Status& local, const std::string& what) {
  mpi::MpiTransport transport(mpi);
  return AgreeAllSucceeded(&transport, local, what, RankNames(mpi->topology().world_ranks));
}

Status NcclResources::FusionBuffer(int device, int64_t bytes, const std::string& what,
                                   char** buffer) {
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
    const std::string error = comms.Broken(comm);
    if (!error.empty()) {
      finalizer.FailPendingOn(comm, error);
      comms.Abort(comm, error);
      return Status::Internal(what + ": " + error);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace gpu
}  // namespace horde

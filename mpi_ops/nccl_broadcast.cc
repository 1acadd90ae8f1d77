#include "mpi_ops/nccl_broadcast.h"

#include "mpi_ops/nccl_allreduce.h"
#include "mpi_ops/device_launch_lock.h"
#include "mpi_ops/nccl_check.h"

namespace horde {
namespace mpi {

bool NcclBroadcast::Enabled(const Response& response, const std::vector<TensorEntry>& entries) const {
  return NcclTakes(response, false);
}

Status NcclBroadcast::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("broadcast", response.names);
  cudaStream_t stream;
  ncclComm_t comm;
  const auto enqueueing = r_->comms.Enqueueing();
  HORDE_RETURN_IF_ERROR(r_->Begin(entries, what, &stream, &comm));
  const auto launching = LockLaunchesOn(comm);
  Status enqueued = CheckNccl(ncclGroupStart(), "ncclGroupStart", what);
  for (size_t i = 0; i < entries.size() && enqueued.ok(); ++i) {
    TensorEntry& e = entries[i];
    enqueued = CheckNccl(ncclBroadcast(e.input->data(), e.output->data(), e.input->size_bytes(), ncclUint8,
                                       response.root, comm, stream),
                         "ncclBroadcast", what);
  }
  const Status ended = CheckNccl(ncclGroupEnd(), "ncclGroupEnd", what);
  if (enqueued.ok()) enqueued = ended;
  return r_->finalizer.CompleteAfter(entries, entries[0].input->device(), stream, comm, what, enqueued);
}

}  // namespace mpi
}  // namespace horde

#include "mpi_ops/nccl_broadcast.h"

#include "mpi_ops/nccl_allreduce.h"
#include "mpi_ops/nccl_check.h"

namespace horde {
namespace mpi {

bool NcclBroadcast::Enabled(const Response& response, const std::vector<TensorEntry>& entries) const {
  return OnOneGpu(response, entries, false);
}

Status NcclBroadcast::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("broadcast", response.names);
  cudaStream_t stream;
  ncclComm_t comm;
  const auto enqueueing = r_->comms.Enqueueing();
  HORDE_RETURN_IF_ERROR(r_->Begin(entries, what, &stream, &comm));
  HORDE_RETURN_IF_ERROR(CheckNccl(ncclGroupStart(), "ncclGroupStart", what));
  Status status;
  for (auto& e : entries) {
    status = CheckNccl(ncclBroadcast(e.input->data(), e.output->data(), e.input->size_bytes(), ncclUint8,
                                     response.root, comm, stream),
                       "ncclBroadcast", what);
    if (!status.ok()) break;
  }
  HORDE_RETURN_IF_ERROR(CheckNccl(ncclGroupEnd(), "ncclGroupEnd", what));
  HORDE_RETURN_IF_ERROR(status);
  return r_->finalizer.CompleteAfter(entries, stream, comm, what);
}

}  // namespace mpi
}  // namespace horde

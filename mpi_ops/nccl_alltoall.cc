#include "mpi_ops/nccl_alltoall.h"

#include <algorithm>

#include "mpi_ops/cuda_check.h"
#include "mpi_ops/nccl_allreduce.h"
#include "mpi_ops/device_launch_lock.h"
#include "mpi_ops/nccl_check.h"

namespace horde {
namespace mpi {

bool NcclAlltoall::Enabled(const Response& response, const std::vector<TensorEntry>& entries) const {
  return NcclTakes(response, false);
}

Status NcclAlltoall::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("alltoall", response.names);
  cudaStream_t stream;
  ncclComm_t comm;
  const auto enqueueing = r_->comms.Enqueueing();
  HORDE_RETURN_IF_ERROR(r_->Begin(entries, what, &stream, &comm));
  Status enqueued;
  for (size_t i = 0; i < entries.size() && enqueued.ok(); ++i) enqueued = Exchange(entries[i], comm, stream, what);
  return r_->finalizer.CompleteAfter(entries, entries[0].input->device(), stream, comm, what, enqueued);
}

Status NcclAlltoall::Prepare(TensorEntry& entry, const std::vector<int64_t>& received, cudaStream_t stream,
                             const std::string& what) {
  TensorShape shape = entry.input->shape();
  if (shape.empty()) return Status::InvalidArgument(what + ": a scalar cannot be split into rows");
  shape[0] = 0;
  for (int64_t rows : received) shape[0] += rows;
  HORDE_RETURN_IF_ERROR(entry.allocate_output(shape, &entry.output));
  if (!entry.received_splits) return Status::Ok();
  std::vector<int32_t> counts(received.begin(), received.end());
  if (entry.received_splits->device() == kCpuDevice) {
    // A host tensor (what Python passes): a stream-ordered copy would wait for the stream.
    std::copy(counts.begin(), counts.end(), static_cast<int32_t*>(entry.received_splits->data()));
    return Status::Ok();
  }
  // From pageable memory the copy has consumed `counts` when the call returns.
  return CheckCuda(cudaMemcpyAsync(entry.received_splits->data(), counts.data(), counts.size() * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, stream),
                   "cudaMemcpyAsync (received splits)", what);
}

Status NcclAlltoall::Exchange(TensorEntry& entry, ncclComm_t comm, cudaStream_t stream, const std::string& what) {
  const int size = r_->mpi->topology().size;
  const MPI_Comm world = r_->mpi->world();
  Status local = entry.splits.size() == static_cast<size_t>(size)
                     ? Status::Ok()
                     : Status::InvalidArgument(what + ": expected " + std::to_string(size) + " splits, got " +
                                               std::to_string(entry.splits.size()));
  std::vector<int64_t> sent = local.ok() ? entry.splits : std::vector<int64_t>(size, 0);
  std::vector<int64_t> received(size, 0);
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Alltoall(sent.data(), 1, MPI_INT64_T, received.data(), 1, MPI_INT64_T, world),
                                 "MPI_Alltoall (row counts)"));
  if (local.ok()) local = Prepare(entry, received, stream, what);
  HORDE_RETURN_IF_ERROR(r_->AgreeAfterAllocating(local, stream, what));

  const int64_t row_bytes = entry.input->row_bytes();
  const char* in = static_cast<const char*>(entry.input->data());
  char* out = static_cast<char*>(entry.output->data());
  const auto launching = LockLaunchesOn(comm);
  HORDE_RETURN_IF_ERROR(CheckNccl(ncclGroupStart(), "ncclGroupStart", what));
  Status status;
  int64_t sent_rows = 0, received_rows = 0;
  for (int r = 0; r < size && status.ok(); ++r) {
    status = CheckNccl(ncclSend(in + sent_rows * row_bytes, sent[r] * row_bytes, ncclUint8, r, comm, stream),
                       "ncclSend", what);
    if (status.ok()) {
      status = CheckNccl(ncclRecv(out + received_rows * row_bytes, received[r] * row_bytes, ncclUint8, r, comm, stream),
                         "ncclRecv", what);
    }
    sent_rows += sent[r];
    received_rows += received[r];
  }
  HORDE_RETURN_IF_ERROR(CheckNccl(ncclGroupEnd(), "ncclGroupEnd", what));
  return status;
}

}  // namespace mpi
}  // namespace horde

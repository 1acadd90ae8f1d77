#include "gpu_ops/nccl_alltoall.h"

#include <algorithm>

#include "gpu_ops/cuda_check.h"
#include "gpu_ops/nccl_allreduce.h"
#include "gpu_ops/nccl_check.h"
#include "gpu_ops/nccl_launch.h"

namespace horde {
namespace gpu {

bool NcclAlltoall::Enabled(const Response& response,
                           const std::vector<TensorEntry>& entries) const {
  return NcclTakes(response, false);
}

Status NcclAlltoall::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("alltoall", response.names);
  std::vector<std::vector<int64_t>> sent(entries.size()), received(entries.size());
  NcclSteps steps;
  steps.allocate = [&](NcclLaunch& launch) {
    Status local;
    for (size_t i = 0; i < entries.size(); ++i) {
      HORDE_RETURN_IF_ERROR(ExchangeCounts(entries[i], what, &local, &sent[i], &received[i]));
      if (local.ok()) local = Prepare(entries[i], received[i], launch.stream(), what);
    }
    return local;
  };
  steps.enqueue = [&](NcclLaunch& launch) {
    return launch.Nccl([&](ncclComm_t comm, cudaStream_t stream) {
      for (size_t i = 0; i < entries.size(); ++i) {
        HORDE_RETURN_IF_ERROR(Exchange(entries[i], sent[i], received[i], comm, stream, what));
      }
      return Status::Ok();
    });
  };
  return LaunchNccl(*r_, entries, what, steps);
}

Status NcclAlltoall::ExchangeCounts(const TensorEntry& entry, const std::string& what,
                                    Status* local, std::vector<int64_t>* sent,
                                    std::vector<int64_t>* received) {
  const size_t size = static_cast<size_t>(r_->mpi->topology().size);
  const bool valid = entry.splits.size() == size;
  if (!valid && local->ok()) {
    *local = Status::InvalidArgument(what + ": expected " + std::to_string(size) + " splits, got " +
                                     std::to_string(entry.splits.size()));
  }
  *sent = valid ? entry.splits : std::vector<int64_t>(size, 0);
  received->assign(size, 0);
  return mpi::CheckMpi(MPI_Alltoall(sent->data(), 1, MPI_INT64_T, received->data(), 1, MPI_INT64_T,
                                    r_->mpi->world()),
                       "MPI_Alltoall (row counts)");
}

Status NcclAlltoall::Prepare(TensorEntry& entry, const std::vector<int64_t>& received,
                             cudaStream_t stream, const std::string& what) {
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
  return CheckCuda(cudaMemcpyAsync(entry.received_splits->data(), counts.data(),
                                   counts.size() * sizeof(int32_t), cudaMemcpyHostToDevice, stream),
                   "cudaMemcpyAsync (received splits)", what);
}

Status NcclAlltoall::Exchange(TensorEntry& entry, const std::vector<int64_t>& sent,
                              const std::vector<int64_t>& received, ncclComm_t comm,
                              cudaStream_t stream, const std::string& what) {
  const int64_t row_bytes = entry.input->row_bytes();
  const char* in = static_cast<const char*>(entry.input->data());
  char* out = static_cast<char*>(entry.output->data());
  int64_t sent_rows = 0, received_rows = 0;
  for (size_t r = 0; r < sent.size(); ++r) {
    const int peer = static_cast<int>(r);
    HORDE_RETURN_IF_ERROR(CheckNccl(
        ncclSend(in + sent_rows * row_bytes, sent[r] * row_bytes, ncclUint8, peer, comm, stream),
        "ncclSend", what));
    HORDE_RETURN_IF_ERROR(
        CheckNccl(ncclRecv(out + received_rows * row_bytes, received[r] * row_bytes, ncclUint8,
                           peer, comm, stream),
                  "ncclRecv", what));
    sent_rows += sent[r];
    received_rows += received[r];
  }
  return Status::Ok();
}

}  // namespace gpu
}  // namespace horde

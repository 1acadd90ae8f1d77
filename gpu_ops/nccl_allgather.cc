#include "gpu_ops/nccl_allgather.h"

#include <algorithm>

#include "gpu_ops/nccl_allreduce.h"
#include "gpu_ops/nccl_check.h"
#include "gpu_ops/nccl_launch.h"

namespace horde {
namespace gpu {

bool NcclAllgather::Enabled(const Response& response,
                            const std::vector<TensorEntry>& entries) const {
  return NcclTakes(response, false);
}

Status NcclAllgather::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("allgather", response.names);
  const size_t size = static_cast<size_t>(r_->mpi->topology().size);
  if (response.first_dims.size() != entries.size() * size) {
    return Status::Internal(what + ": the response carries " +
                            std::to_string(response.first_dims.size()) + " first dimensions for " +
                            std::to_string(entries.size()) + " tensors on " + std::to_string(size) +
                            " ranks");
  }
  NcclSteps steps;
  steps.allocate = [&](NcclLaunch&) {
    for (size_t i = 0; i < entries.size(); ++i) {
      HORDE_RETURN_IF_ERROR(
          AllocateOutput(entries[i], &response.first_dims[i * size], static_cast<int>(size)));
    }
    return Status::Ok();
  };
  steps.enqueue = [&](NcclLaunch& launch) {
    return launch.Nccl([&](ncclComm_t comm, cudaStream_t stream) {
      for (size_t i = 0; i < entries.size(); ++i) {
        HORDE_RETURN_IF_ERROR(Gather(entries[i], &response.first_dims[i * size],
                                     static_cast<int>(size), comm, stream, what));
      }
      return Status::Ok();
    });
  };
  return LaunchNccl(*r_, entries, what, steps);
}

Status NcclAllgather::AllocateOutput(TensorEntry& entry, const int64_t* first_dims, int size) {
  TensorShape output_shape = RowShape(entry.input->shape());
  int64_t rows = 0;
  for (int r = 0; r < size; ++r) rows += first_dims[r];
  output_shape.insert(output_shape.begin(), rows);
  return entry.allocate_output(output_shape, &entry.output);
}

Status NcclAllgather::Gather(TensorEntry& entry, const int64_t* first_dims, int size,
                             ncclComm_t comm, cudaStream_t stream, const std::string& what) {
  const int64_t row_bytes = entry.input->row_bytes();
  char* out = static_cast<char*>(entry.output->data());
  const bool equal = std::all_of(first_dims, first_dims + size,
                                 [&](int64_t d) { return d == first_dims[0]; });
  if (equal) {
    return CheckNccl(
        ncclAllGather(entry.input->data(), out, first_dims[0] * row_bytes, ncclUint8, comm, stream),
        "ncclAllGather", what);
  }
  int64_t offset = 0;
  for (int r = 0; r < size; ++r) {
    const int64_t bytes = first_dims[r] * row_bytes;
    HORDE_RETURN_IF_ERROR(CheckNccl(
        ncclBroadcast(entry.input->data(), out + offset, bytes, ncclUint8, r, comm, stream),
        "ncclBroadcast", what));
    offset += bytes;
  }
  return Status::Ok();
}

}  // namespace gpu
}  // namespace horde

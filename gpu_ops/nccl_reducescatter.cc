#include "gpu_ops/nccl_reducescatter.h"

#include <algorithm>

#include "core/row_split.h"
#include "gpu_ops/cuda_check.h"
#include "gpu_ops/cuda_kernels.h"
#include "gpu_ops/nccl_allreduce.h"
#include "gpu_ops/nccl_check.h"
#include "gpu_ops/nccl_datatypes.h"
#include "gpu_ops/nccl_launch.h"

namespace horde {
namespace gpu {

bool NcclReducescatter::Enabled(const Response& response,
                                const std::vector<TensorEntry>& entries) const {
  return NcclTakes(response, true);
}

Status NcclReducescatter::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("reducescatter", response.names);
  char* scratch = nullptr;
  NcclSteps steps;
  steps.allocate = [&](NcclLaunch& launch) {
    int64_t largest = 0;
    for (auto& entry : entries) {
      HORDE_RETURN_IF_ERROR(AllocateOutput(entry, what));
      largest = std::max(largest, entry.input->size_bytes());
    }
    return response.prescale == 1.0 ? Status::Ok()
                                    : r_->devices.FusionBuffer(launch.device(), largest, &scratch);
  };
  steps.enqueue = [&](NcclLaunch& launch) {
    for (auto& entry : entries) HORDE_RETURN_IF_ERROR(Scatter(entry, response, scratch, launch));
    return Status::Ok();
  };
  return LaunchNccl(*r_, entries, what, steps);
}

Status NcclReducescatter::AllocateOutput(TensorEntry& entry, const std::string& what) const {
  const Topology& topology = r_->mpi->topology();
  TensorShape shape = entry.input->shape();
  if (shape.empty())
    return Status::InvalidArgument(what + ": a scalar cannot be scattered by rows");
  shape[0] = ReducescatterRows(shape[0], topology.size)[topology.rank];
  return entry.allocate_output(shape, &entry.output);
}

Status NcclReducescatter::Scatter(TensorEntry& entry, const Response& response, char* scratch,
                                  NcclLaunch& launch) {
  const Topology& topology = r_->mpi->topology();
  const TensorShape shape = entry.input->shape();
  const std::vector<int64_t> rows = ReducescatterRows(shape[0], topology.size);
  const int64_t row_elements = shape[0] == 0 ? 0 : NumElements(shape) / shape[0];
  const int64_t element_size = DataTypeSize(response.dtype);
  const std::string& what = launch.what();
  const char* send = static_cast<const char*>(entry.input->data());
  if (scratch != nullptr) {
    // Entries run one after another on the stream, so they can share the buffer.
    const int64_t bytes = entry.input->size_bytes();
    HORDE_RETURN_IF_ERROR(
        CheckCuda(cudaMemcpyAsync(scratch, send, bytes, cudaMemcpyDeviceToDevice, launch.stream()),
                  "cudaMemcpyAsync (prescale copy)", what));
    HORDE_RETURN_IF_ERROR(CheckCuda(ScaleDeviceBuffer(scratch, bytes / element_size, response.dtype,
                                                      response.prescale, launch.stream()),
                                    "prescale kernel", what));
    send = scratch;
  }
  ncclDataType_t type;
  NcclType(response.dtype, &type);
  const ncclRedOp_t op = NcclOp(response.reduce_op, response.dtype);
  void* out = entry.output->data();
  const bool equal = std::all_of(rows.begin(), rows.end(), [&](int64_t n) { return n == rows[0]; });
  HORDE_RETURN_IF_ERROR(launch.Nccl([&](ncclComm_t comm, cudaStream_t stream) {
    if (equal) {
      return CheckNccl(ncclReduceScatter(send, out, rows[0] * row_elements, type, op, comm, stream),
                       "ncclReduceScatter", what);
    }
    int64_t offset = 0;
    for (int r = 0; r < topology.size; ++r) {
      HORDE_RETURN_IF_ERROR(CheckNccl(ncclReduce(send + offset * row_elements * element_size, out,
                                                 rows[r] * row_elements, type, op, r, comm, stream),
                                      "ncclReduce", what));
      offset += rows[r];
    }
    return Status::Ok();
  }));
  return CheckCuda(PostscaleDeviceBuffer(out, rows[topology.rank] * row_elements, response.dtype,
                                         NcclPostscale(response, topology.size), launch.stream()),
                   "postscale kernel", what);
}

}  // namespace gpu
}  // namespace horde

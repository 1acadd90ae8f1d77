#include "mpi_ops/nccl_reducescatter.h"

#include <algorithm>

#include "core/row_split.h"
#include "mpi_ops/cuda_check.h"
#include "mpi_ops/cuda_kernels.h"
#include "mpi_ops/nccl_allreduce.h"
#include "mpi_ops/nccl_check.h"
#include "mpi_ops/nccl_datatypes.h"

namespace horde {
namespace mpi {

bool NcclReducescatter::Enabled(const Response& response, const std::vector<TensorEntry>& entries) const {
  return OnOneGpu(response, entries, true);
}

Status NcclReducescatter::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("reducescatter", response.names);
  const int device = entries[0].input->device();
  cudaStream_t stream;
  ncclComm_t comm;
  const auto enqueueing = r_->comms.Enqueueing();
  HORDE_RETURN_IF_ERROR(r_->Begin(entries, what, &stream, &comm));
  for (auto& entry : entries) HORDE_RETURN_IF_ERROR(Scatter(entry, response, device, comm, stream, what));
  return r_->finalizer.CompleteAfter(entries, stream, comm, what);
}

Status NcclReducescatter::Scatter(TensorEntry& entry, const Response& response, int device, ncclComm_t comm,
                                  cudaStream_t stream, const std::string& what) {
  const Topology& topology = r_->mpi->topology();
  TensorShape shape = entry.input->shape();
  if (shape.empty()) return Status::InvalidArgument(what + ": a scalar cannot be scattered by rows");
  const std::vector<int64_t> rows = ReducescatterRows(shape[0], topology.size);
  const int64_t row_elements = shape[0] == 0 ? 0 : NumElements(shape) / shape[0];
  TensorShape output_shape = shape;
  output_shape[0] = rows[topology.rank];
  HORDE_RETURN_IF_ERROR(entry.allocate_output(output_shape, &entry.output));

  const int64_t element_size = DataTypeSize(response.dtype);
  const char* send = static_cast<const char*>(entry.input->data());
  if (response.prescale != 1.0) {
    // Entries run one after another on the stream, so they can share the buffer.
    char* scaled = nullptr;
    const int64_t bytes = entry.input->size_bytes();
    HORDE_RETURN_IF_ERROR(r_->devices.FusionBuffer(device, bytes, &scaled));
    HORDE_RETURN_IF_ERROR(CheckCuda(cudaMemcpyAsync(scaled, send, bytes, cudaMemcpyDeviceToDevice, stream),
                                    "cudaMemcpyAsync (prescale copy)", what));
    HORDE_RETURN_IF_ERROR(CheckCuda(ScaleDeviceBuffer(scaled, bytes / element_size, response.dtype,
                                                      response.prescale, stream),
                                    "prescale kernel", what));
    send = scaled;
  }
  ncclDataType_t type;
  NcclType(response.dtype, &type);
  const ncclRedOp_t op = NcclOp(response.reduce_op, response.dtype);
  void* out = entry.output->data();
  if (std::all_of(rows.begin(), rows.end(), [&](int64_t n) { return n == rows[0]; })) {
    HORDE_RETURN_IF_ERROR(CheckNccl(ncclReduceScatter(send, out, rows[0] * row_elements, type, op, comm, stream),
                                    "ncclReduceScatter", what));
  } else {
    HORDE_RETURN_IF_ERROR(CheckNccl(ncclGroupStart(), "ncclGroupStart", what));
    Status status;
    int64_t offset = 0;
    for (int r = 0; r < topology.size && status.ok(); ++r) {
      status = CheckNccl(ncclReduce(send + offset * row_elements * element_size, out, rows[r] * row_elements, type,
                                    op, r, comm, stream),
                         "ncclReduce", what);
      offset += rows[r];
    }
    HORDE_RETURN_IF_ERROR(CheckNccl(ncclGroupEnd(), "ncclGroupEnd", what));
    HORDE_RETURN_IF_ERROR(status);
  }
  return CheckCuda(ScaleDeviceBuffer(out, rows[topology.rank] * row_elements, response.dtype,
                                     NcclPostscale(response, topology.size), stream),
                   "postscale kernel", what);
}

}  // namespace mpi
}  // namespace horde

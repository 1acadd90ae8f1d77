#include "mpi_ops/nccl_allreduce.h"

#include "core/fusion_planner.h"
#include "mpi_ops/cuda_check.h"
#include "mpi_ops/cuda_kernels.h"
#include "mpi_ops/device_launch_lock.h"
#include "mpi_ops/nccl_check.h"
#include "mpi_ops/nccl_datatypes.h"

namespace horde {
namespace mpi {

bool NcclTakes(const Response& response, bool needs_nccl_type) {
  ncclDataType_t type;
  return response.device >= 0 && (!needs_nccl_type || NcclType(response.dtype, &type));
}

bool NcclAllreduce::Enabled(const Response& response, const std::vector<TensorEntry>& entries) const {
  return NcclTakes(response, true);
}

Status NcclAllreduce::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("allreduce", response.names);
  HORDE_RETURN_IF_ERROR(r_->AgreeOnOneGpu(entries, what));
  const int device = entries[0].input->device();
  const auto enqueueing = r_->comms.Enqueueing();
  cudaStream_t stream;
  ncclComm_t comm;
  HORDE_RETURN_IF_ERROR(r_->devices.Stream(device, &stream));
  HORDE_RETURN_IF_ERROR(Communicator(device, what, &comm));
  if (entries.size() == 1) {
    HORDE_RETURN_IF_ERROR(WaitForInputs(entries, stream, what));
    const Status enqueued = EnqueueOne(entries[0], response, comm, stream, what);
    return r_->finalizer.CompleteAfter(entries, device, stream, comm, what, enqueued);
  }
  std::vector<int64_t> sizes;
  for (auto& e : entries) sizes.push_back(e.input->size_bytes());
  int64_t total = 0;
  const std::vector<int64_t> offsets = FusionOffsets(sizes, &total);
  char* buffer = nullptr;
  HORDE_RETURN_IF_ERROR(r_->FusionBuffer(device, total, what, &buffer));
  HORDE_RETURN_IF_ERROR(WaitForInputs(entries, stream, what));
  std::vector<CopySpan> in, out;
  for (size_t i = 0; i < entries.size(); ++i) {
    in.push_back({entries[i].input->data(), buffer + offsets[i], sizes[i]});
    out.push_back({buffer + offsets[i], entries[i].output->data(), sizes[i]});
  }
  const Status enqueued = EnqueueFused(in, out, buffer, total, response, comm, stream, what);
  return r_->finalizer.CompleteAfter(entries, device, stream, comm, what, enqueued);
}

Status NcclAllreduce::EnqueueOne(TensorEntry& e, const Response& response, ncclComm_t comm, cudaStream_t stream,
                                 const std::string& what) {
  r_->timeline->ActivityStart(response.names, "NCCL_ALLREDUCE");
  const int64_t bytes = e.input->size_bytes();
  if (e.output->data() != e.input->data() && bytes > 0) {
    HORDE_RETURN_IF_ERROR(CheckCuda(cudaMemcpyAsync(e.output->data(), e.input->data(), bytes,
                                                    cudaMemcpyDeviceToDevice, stream),
                                    "cudaMemcpyAsync", what));
  }
  return Reduce(e.output->data(), bytes / DataTypeSize(response.dtype), response, comm, stream, what);
}

Status NcclAllreduce::EnqueueFused(const std::vector<CopySpan>& in, const std::vector<CopySpan>& out, char* buffer,
                                   int64_t total, const Response& response, ncclComm_t comm, cudaStream_t stream,
                                   const std::string& what) {
  // Alignment padding is not zeroed (unlike the host path): a GPU does not trap on the
  // garbage a scale kernel may meet there, and padding is never copied out.
  r_->timeline->ActivityStart(response.names, "MEMCPY_IN_FUSION_BUFFER");
  HORDE_RETURN_IF_ERROR(CheckCuda(BatchedDeviceCopy(in, stream), "BatchedDeviceCopy (in)", what));
  r_->timeline->ActivityStart(response.names, "NCCL_ALLREDUCE");
  HORDE_RETURN_IF_ERROR(Reduce(buffer, total / DataTypeSize(response.dtype), response, comm, stream, what));
  r_->timeline->ActivityStart(response.names, "MEMCPY_OUT_FUSION_BUFFER");
  return CheckCuda(BatchedDeviceCopy(out, stream), "BatchedDeviceCopy (out)", what);
}

Status NcclAllreduce::Communicator(int device, const std::string& what, ncclComm_t* comm) {
  return r_->comms.Get(device, what, comm);
}

Status NcclAllreduce::Reduce(void* data, int64_t count, const Response& response, ncclComm_t comm,
                             cudaStream_t stream, const std::string& what) {
  ncclDataType_t type;
  NcclType(response.dtype, &type);
  HORDE_RETURN_IF_ERROR(CheckCuda(ScaleDeviceBuffer(data, count, response.dtype, response.prescale, stream),
                                  "prescale kernel", what));
  {
    const auto launching = LockLaunchesOn(comm);
    HORDE_RETURN_IF_ERROR(CheckNccl(ncclAllReduce(data, data, count, type, NcclOp(response.reduce_op, response.dtype),
                                                  comm, stream),
                                    "ncclAllReduce", what));
  }
  const Postscale postscale = NcclPostscale(response, r_->mpi->topology().size);
  return CheckCuda(PostscaleDeviceBuffer(data, count, response.dtype, postscale, stream), "postscale kernel", what);
}

}  // namespace mpi
}  // namespace horde

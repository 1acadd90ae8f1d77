#include "gpu_ops/nccl_allreduce.h"

#include "core/fusion_planner.h"
#include "gpu_ops/cuda_check.h"
#include "gpu_ops/cuda_kernels.h"
#include "gpu_ops/nccl_check.h"
#include "gpu_ops/nccl_datatypes.h"

namespace horde {
namespace gpu {

bool NcclTakes(const Response& response, bool needs_nccl_type) {
  ncclDataType_t type;
  return response.device >= 0 && (!needs_nccl_type || NcclType(response.dtype, &type));
}

bool NcclAllreduce::Enabled(const Response& response,
                            const std::vector<TensorEntry>& entries) const {
  return NcclTakes(response, true);
}

Status NcclAllreduce::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  const std::string what = OperationName("allreduce", response.names);
  NcclSteps steps;
  steps.communicator = [this](int device, const std::string& what, ncclComm_t* comm) {
    return Communicator(device, what, comm);
  };
  steps.enqueue = [&](NcclLaunch& launch) {
    return entries.size() == 1 ? EnqueueOne(entries[0], response, launch)
                               : EnqueueFused(entries, response, launch);
  };
  return LaunchNccl(*r_, entries, what, steps);
}

Status NcclAllreduce::EnqueueOne(TensorEntry& e, const Response& response, NcclLaunch& launch) {
  r_->timeline->ActivityStart(response.names, "NCCL_ALLREDUCE");
  const int64_t bytes = e.input->size_bytes();
  if (e.output->data() != e.input->data() && bytes > 0) {
    HORDE_RETURN_IF_ERROR(CheckCuda(cudaMemcpyAsync(e.output->data(), e.input->data(), bytes,
                                                    cudaMemcpyDeviceToDevice, launch.stream()),
                                    "cudaMemcpyAsync", launch.what()));
  }
  return Reduce(e.output->data(), bytes / DataTypeSize(response.dtype), response, launch);
}

Status NcclAllreduce::EnqueueFused(std::vector<TensorEntry>& entries, const Response& response,
                                   NcclLaunch& launch) {
  std::vector<int64_t> sizes;
  for (auto& e : entries) sizes.push_back(e.input->size_bytes());
  int64_t total = 0;
  const std::vector<int64_t> offsets = FusionOffsets(sizes, &total);
  char* buffer = nullptr;
  HORDE_RETURN_IF_ERROR(r_->FusionBuffer(launch.device(), total, launch.what(), &buffer));
  std::vector<CopySpan> in, out;
  for (size_t i = 0; i < entries.size(); ++i) {
    in.push_back({entries[i].input->data(), buffer + offsets[i], sizes[i]});
    out.push_back({buffer + offsets[i], entries[i].output->data(), sizes[i]});
  }
  // Alignment padding is not zeroed (unlike the host path): a GPU does not trap on the
  // garbage a scale kernel may meet there, and padding is never copied out.
  r_->timeline->ActivityStart(response.names, "MEMCPY_IN_FUSION_BUFFER");
  HORDE_RETURN_IF_ERROR(
      CheckCuda(BatchedDeviceCopy(in, launch.stream()), "BatchedDeviceCopy (in)", launch.what()));
  r_->timeline->ActivityStart(response.names, "NCCL_ALLREDUCE");
  HORDE_RETURN_IF_ERROR(Reduce(buffer, total / DataTypeSize(response.dtype), response, launch));
  r_->timeline->ActivityStart(response.names, "MEMCPY_OUT_FUSION_BUFFER");
  return CheckCuda(BatchedDeviceCopy(out, launch.stream()), "BatchedDeviceCopy (out)",
                   launch.what());
}

Status NcclAllreduce::Communicator(int device, const std::string& what, ncclComm_t* comm) {
  return r_->comms.Get(device, what, comm);
}

Status NcclAllreduce::Reduce(void* data, int64_t count, const Response& response,
                             NcclLaunch& launch) {
  ncclDataType_t type;
  NcclType(response.dtype, &type);
  HORDE_RETURN_IF_ERROR(
      CheckCuda(ScaleDeviceBuffer(data, count, response.dtype, response.prescale, launch.stream()),
                "prescale kernel", launch.what()));
  HORDE_RETURN_IF_ERROR(launch.Nccl([&](ncclComm_t comm, cudaStream_t stream) {
    return CheckNccl(ncclAllReduce(data, data, count, type,
                                   NcclOp(response.reduce_op, response.dtype), comm, stream),
                     "ncclAllReduce", launch.what());
  }));
  const Postscale postscale = NcclPostscale(response, r_->mpi->topology().size);
  return CheckCuda(PostscaleDeviceBuffer(data, count, response.dtype, postscale, launch.stream()),
                   "postscale kernel", launch.what());
}

}  // namespace gpu
}  // namespace horde

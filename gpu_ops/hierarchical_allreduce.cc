#include "gpu_ops/hierarchical_allreduce.h"

#include <algorithm>
#include <climits>

#include "gpu_ops/cuda_check.h"
#include "gpu_ops/cuda_kernels.h"
#include "gpu_ops/nccl_check.h"
#include "gpu_ops/nccl_datatypes.h"

namespace horde {
namespace gpu {

HierarchicalAllreduce::~HierarchicalAllreduce() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  // Split from the runtime's communicator: kept like it when a rank failure cut it off.
  const bool cut_off = r_ && r_->mpi && r_->mpi->cut_off();
  for (MPI_Comm* comm : {&node_, &cross_}) {
    if (cut_off) {
      mpi::KeepCommunicator(comm);
    } else if (*comm != MPI_COMM_NULL) {
      MPI_Comm_free(comm);
    }
  }
}

bool HierarchicalAllreduce::Enabled(const Response& response,
                                    const std::vector<TensorEntry>& entries) const {
  const Topology& topology = r_->mpi->topology();
  return topology.cross_size > 1 && topology.homogeneous &&
         NcclAllreduce::Enabled(response, entries);
}

Status HierarchicalAllreduce::EnsureCommunicators() {
  if (node_ != MPI_COMM_NULL) return Status::Ok();
  const Topology& topology = r_->mpi->topology();
  HORDE_RETURN_IF_ERROR(mpi::CheckMpi(MPI_Comm_split_type(r_->mpi->world(), MPI_COMM_TYPE_SHARED,
                                                          topology.rank, MPI_INFO_NULL, &node_),
                                      "MPI_Comm_split_type (hierarchical allreduce)"));
  int local_rank = 0;
  HORDE_RETURN_IF_ERROR(mpi::CheckMpi(MPI_Comm_rank(node_, &local_rank), "MPI_Comm_rank"));
  return mpi::CheckMpi(MPI_Comm_split(r_->mpi->world(), local_rank, topology.rank, &cross_),
                       "MPI_Comm_split (hierarchical allreduce)");
}

Status HierarchicalAllreduce::Communicator(int device, const std::string& what, ncclComm_t* comm) {
  HORDE_RETURN_IF_ERROR(EnsureCommunicators());
  return r_->comms.GetOver(node_, "node", device, what, comm);
}

Status HierarchicalAllreduce::Reduce(void* data, int64_t count, const Response& response,
                                     NcclLaunch& launch) {
  int local_rank = 0, local_size = 1;
  HORDE_RETURN_IF_ERROR(mpi::CheckMpi(MPI_Comm_rank(node_, &local_rank), "MPI_Comm_rank"));
  HORDE_RETURN_IF_ERROR(mpi::CheckMpi(MPI_Comm_size(node_, &local_size), "MPI_Comm_size"));
  ncclDataType_t type;
  NcclType(response.dtype, &type);
  // Average sums everywhere and divides once by the world size at the end.
  const ReduceOp reduce = response.reduce_op == ReduceOp::kAverage ? ReduceOp::kSum
                                                                   : response.reduce_op;
  const ncclRedOp_t op = NcclOp(reduce, response.dtype);
  const int64_t element_size = DataTypeSize(response.dtype);
  const std::string& what = launch.what();
  char* bytes = static_cast<char*>(data);
  const int64_t shard = count / local_size;
  const int64_t rest = count - shard * local_size;
  char* my_shard = bytes + local_rank * shard * element_size;
  char* rest_at = bytes + shard * local_size * element_size;
  // The host buffer of the MPI step, grown before anything is enqueued: a rank that
  // cannot grow it fails the op on every rank instead of leaving them in NCCL or MPI.
  const int64_t staging = std::max(shard, rest) * element_size;
  if (staging > staging_agreed_) {
    char* unused = nullptr;
    HORDE_RETURN_IF_ERROR(r_->AgreeToLaunch(staging_.Reserve(staging, &unused), what));
    staging_agreed_ = staging;
  }

  HORDE_RETURN_IF_ERROR(
      CheckCuda(ScaleDeviceBuffer(data, count, response.dtype, response.prescale, launch.stream()),
                "prescale kernel", what));
  HORDE_RETURN_IF_ERROR(launch.Nccl([&](ncclComm_t node, cudaStream_t stream) {
    if (shard > 0) {
      HORDE_RETURN_IF_ERROR(
          CheckNccl(ncclReduceScatter(bytes, my_shard, shard, type, op, node, stream),
                    "ncclReduceScatter (within the node)", what));
    }
    if (rest == 0) return Status::Ok();
    return CheckNccl(ncclAllReduce(rest_at, rest_at, rest, type, op, node, stream),
                     "ncclAllReduce (within the node)", what);
  }));
  if (shard > 0) HORDE_RETURN_IF_ERROR(ReduceAcrossNodes(my_shard, shard, response, launch));
  if (rest > 0) HORDE_RETURN_IF_ERROR(ReduceAcrossNodes(rest_at, rest, response, launch));
  if (shard > 0) {
    HORDE_RETURN_IF_ERROR(launch.Nccl([&](ncclComm_t node, cudaStream_t stream) {
      return CheckNccl(ncclAllGather(my_shard, bytes, shard, type, node, stream),
                       "ncclAllGather (within the node)", what);
    }));
  }
  const Postscale postscale = PostscaleOf(response, r_->mpi->topology().size);
  return CheckCuda(PostscaleDeviceBuffer(data, count, response.dtype, postscale, launch.stream()),
                   "postscale kernel", what);
}

Status HierarchicalAllreduce::ReduceAcrossNodes(char* data, int64_t count, const Response& response,
                                                NcclLaunch& launch) {
  const std::string& what = launch.what();
  if (count > INT_MAX) return Status::InvalidArgument(what + ": a shard over INT_MAX elements");
  const int64_t bytes = count * DataTypeSize(response.dtype);
  char* host = nullptr;
  HORDE_RETURN_IF_ERROR(
      staging_.Reserve(bytes, &host));  // within what Reduce agreed, so no allocation
  HORDE_RETURN_IF_ERROR(
      CheckCuda(cudaMemcpyAsync(host, data, bytes, cudaMemcpyDeviceToHost, launch.stream()),
                "cudaMemcpyAsync (shard to host)", what));
  HORDE_RETURN_IF_ERROR(launch.WaitForStream());
  HORDE_RETURN_IF_ERROR(mpi::CheckMpi(
      MPI_Allreduce(MPI_IN_PLACE, host, static_cast<int>(count), types_->Datatype(response.dtype),
                    types_->Op(response.dtype, response.reduce_op), cross_),
      "MPI_Allreduce (across nodes)"));
  // From pageable memory the copy has consumed `host` when the call returns, so the
  // staging buffer may be reused by the next shard.
  return CheckCuda(cudaMemcpyAsync(data, host, bytes, cudaMemcpyHostToDevice, launch.stream()),
                   "cudaMemcpyAsync (shard to device)", what);
}

}  // namespace gpu
}  // namespace horde

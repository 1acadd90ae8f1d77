#include "gpu_ops/nccl_communicators.h"

#include "core/logging.h"
#include "gpu_ops/nccl_check.h"

namespace horde {
namespace gpu {

NcclCommunicators::~NcclCommunicators() {
  // Abort, not destroy: the runtime has stopped, so nothing of ours is pending, and
  // after a lost rank (in-place elastic recovery) destroying could wait on a dead peer.
  for (auto& [key, entry] : comms_) {
    if (entry.comm) ncclCommAbort(entry.comm);
  }
}

Status NcclCommunicators::Get(int device, const std::string& what, ncclComm_t* comm) {
  return GetOver(context_->world(), "world", device, what, comm);
}

Status NcclCommunicators::GetOver(MPI_Comm comm, const std::string& key, int device,
                                  const std::string& what, ncclComm_t* out) {
  const std::string full_key = key + "/cuda:" + std::to_string(device);
  auto found = comms_.find(full_key);
  if (found != comms_.end()) {
    if (!found->second.comm) {
      return Status::Internal(what + ": the NCCL communicator " + full_key +
                              " was aborted after an earlier error: " + found->second.broken);
    }
    *out = found->second.comm;
    return Status::Ok();
  }
  int rank = 0, size = 1;
  HORDE_RETURN_IF_ERROR(mpi::CheckMpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank"));
  HORDE_RETURN_IF_ERROR(mpi::CheckMpi(MPI_Comm_size(comm, &size), "MPI_Comm_size"));
  ncclUniqueId id;
  if (rank == 0) HORDE_RETURN_IF_ERROR(CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId", what));
  HORDE_RETURN_IF_ERROR(
      mpi::CheckMpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm), "MPI_Bcast (NCCL unique id)"));
  ncclComm_t created;
  HORDE_RETURN_IF_ERROR(
      CheckNccl(ncclCommInitRank(&created, size, id, rank), "ncclCommInitRank", what));
  // The library loaded may be the framework's, not the one horde was built with.
  int version = 0;
  ncclGetVersion(&version);
  HORDE_LOG(kDebug) << "NCCL communicator " << full_key << " over " << size << " ranks (NCCL "
                    << version << ", built with " << NCCL_VERSION_CODE << ")";
  comms_[full_key].comm = created;
  *out = created;
  return Status::Ok();
}

std::string NcclCommunicators::AsyncError(ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  const ncclResult_t queried = ncclCommGetAsyncError(comm, &async);
  if (queried != ncclSuccess) async = queried;
  if (async == ncclSuccess || async == ncclInProgress) return "";
  std::string text = std::string("NCCL failed asynchronously: ") + ncclGetErrorString(async);
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}

std::string NcclCommunicators::Broken(ncclComm_t comm) const {
  if (failed_.load(std::memory_order_acquire)) return failure_;
  return AsyncError(comm);
}

void NcclCommunicators::MarkFailed(const std::string& reason) {
  if (failed_.load(std::memory_order_acquire)) return;
  failure_ = reason;
  failed_.store(true, std::memory_order_release);
}

std::vector<ncclComm_t> NcclCommunicators::Live() const {
  std::vector<ncclComm_t> live;
  for (const auto& [key, entry] : comms_) {
    if (entry.comm) live.push_back(entry.comm);
  }
  return live;
}

void NcclCommunicators::Abort(ncclComm_t comm, const std::string& reason) {
  for (auto& [key, entry] : comms_) {
    if (entry.comm != comm) continue;
    ncclCommAbort(comm);
    entry.comm = nullptr;
    entry.broken = reason;
    return;
  }
}

}  // namespace gpu
}  // namespace horde

#include "mpi_ops/nccl_communicators.h"

#include "mpi_ops/nccl_check.h"

namespace horde {
namespace mpi {

NcclCommunicators::~NcclCommunicators() {
  for (auto& [key, comm] : comms_) ncclCommDestroy(comm);
}

Status NcclCommunicators::Get(int device, const std::string& what, ncclComm_t* comm) {
  return GetOver(context_->world(), "world", device, what, comm);
}

Status NcclCommunicators::GetOver(MPI_Comm comm, const std::string& key, int device,
                                  const std::string& what, ncclComm_t* out) {
  const std::string full_key = key + "/cuda:" + std::to_string(device);
  auto found = comms_.find(full_key);
  if (found != comms_.end()) {
    *out = found->second;
    return Status::Ok();
  }
  int rank = 0, size = 1;
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank"));
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Comm_size(comm, &size), "MPI_Comm_size"));
  ncclUniqueId id;
  if (rank == 0) HORDE_RETURN_IF_ERROR(CheckNccl(ncclGetUniqueId(&id), "ncclGetUniqueId", what));
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm), "MPI_Bcast (NCCL unique id)"));
  ncclComm_t created;
  HORDE_RETURN_IF_ERROR(CheckNccl(ncclCommInitRank(&created, size, id, rank), "ncclCommInitRank", what));
  comms_.emplace(full_key, created);
  *out = created;
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde

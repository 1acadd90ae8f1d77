#include "mpi_ops/mpi_barrier.h"

#include "mpi_ops/mpi_wait.h"

namespace horde {
namespace mpi {

Status MpiBarrier::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  MPI_Request request;
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Ibarrier(context_->world(), &request), "MPI_Ibarrier"));
  return WaitPolling(&request, "MPI_Ibarrier");
}

}  // namespace mpi
}  // namespace horde

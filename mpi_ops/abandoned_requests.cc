#include "mpi_ops/abandoned_requests.h"

#include "mpi_ops/idle_backoff.h"

namespace horde {
namespace mpi {

void ReleaseRequest(MPI_Request* request) {
  if (*request != MPI_REQUEST_NULL) MPI_Request_free(request);
  *request = MPI_REQUEST_NULL;
}

void CancelReceive(MPI_Request* request) {
  if (*request == MPI_REQUEST_NULL) return;
  MPI_Cancel(request);
  MPI_Wait(request, MPI_STATUS_IGNORE);
  ReleaseRequest(request);
}

int DrainSends(const std::vector<MPI_Request*>& sends) {
  const auto deadline = std::chrono::steady_clock::now() + kSendDrain;
  IdleBackoff idle;
  size_t open = sends.size();
  while (open > 0 && std::chrono::steady_clock::now() < deadline) {
    open = 0;
    for (MPI_Request* request : sends) {
      if (*request == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) ReleaseRequest(request);
      open += *request == MPI_REQUEST_NULL ? 0 : 1;
    }
    idle.Pass(/*moved=*/false);
  }
  for (MPI_Request* request : sends) {
    if (*request == MPI_REQUEST_NULL) continue;
    MPI_Cancel(request);
    ReleaseRequest(request);
  }
  return static_cast<int>(open);
}

}  // namespace mpi
}  // namespace horde

#pragma once

#include <mpi.h>

#include <chrono>
#include <vector>

namespace horde {
namespace mpi {

// Ending the point-to-point requests of a call that failed, so that none is left posted:
// the runtime lives on after a failure (in-place recovery), and MPI must neither write
// into nor read from a buffer it reuses.

// How long a failed call waits for its sends to be taken before it cancels and frees
// them: a live receiver takes them at once, a revoked communicator ends them at once.
constexpr auto kSendDrain = std::chrono::seconds(2);

// After a failed MPI_Wait or MPI_Test the request may still be allocated: frees it.
void ReleaseRequest(MPI_Request* request);
// A receive that may never be matched: cancelled, then completed (errors tolerated: the
// call has failed already, and a revoked communicator fails these too).
void CancelReceive(MPI_Request* request);
// Completes `sends` while their receivers take them, until kSendDrain has passed; then
// cancels and frees what is left. Returns how many were left.
int DrainSends(const std::vector<MPI_Request*>& sends);

}  // namespace mpi
}  // namespace horde

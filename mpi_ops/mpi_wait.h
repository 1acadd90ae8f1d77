#pragma once

#include <mpi.h>

#include "horde/status.h"

namespace horde {
namespace mpi {

// Completes a non-blocking MPI operation without spinning: polls MPI_Test, yielding
// briefly at first and then sleeping with a back-off, so a thread waiting for slower
// ranks leaves the cores to training.
Status WaitPolling(MPI_Request* request, const char* call);

// Completes a non-blocking MPI operation that moves data, calling MPI_Test without
// pause: Open MPI advances a non-blocking collective only inside MPI calls, so this
// thread is the one doing the transfer.
Status WaitProgressing(MPI_Request* request, const char* call);

}  // namespace mpi
}  // namespace horde

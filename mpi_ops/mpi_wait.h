#pragma once

#include <mpi.h>

#include "core/status.h"

namespace horde {
namespace mpi {

// Completes a non-blocking MPI operation without spinning: polls MPI_Test, yielding
// briefly at first and then sleeping with a back-off, so a thread waiting for slower
// ranks leaves the cores to training.
Status WaitPolling(MPI_Request* request, const char* call);

}  // namespace mpi
}  // namespace horde

#pragma once

#include <mpi.h>

#include "horde/status.h"

namespace horde {
namespace mpi {

// What this MPI does when a rank of the job dies. With MPI's fault-tolerance extension
// (ULFM: Open MPI 5 started with `mpirun --with-ft ulfm`) the survivors' calls that
// involve the dead rank fail instead of the job ending, and the survivors can agree and
// shrink their communicators; without it a dead rank ends the job. CMake builds
// rank_failures_ulfm.cc where mpi-ext.h declares the extension, rank_failures_none.cc
// elsewhere.

// Whether a rank failure can be survived: the extension is built in and mpirun enabled it.
bool SurvivesRankFailures();

// Gives `comm` horde's error handler: MPI calls return their errors (none aborts). Where
// failures are survivable, an error that says a rank failed also revokes `comm`: MPI
// reports such errors only to some ranks, and revoking makes every rank's next call on
// `comm` fail at once instead of waiting for a rank that already gave up.
void SetErrorHandler(MPI_Comm comm);

// Makes every pending and later call on `comm`, on every rank, fail (where failures are
// survivable; elsewhere does nothing).
void RevokeCommunicator(MPI_Comm comm);

// Revokes `comm` and makes `*shrunk`, a communicator of its live ranks, numbered in
// their order in `comm`. Collective over the live ranks; works on a revoked `comm`.
Status ShrinkCommunicator(MPI_Comm comm, MPI_Comm* shrunk);

// ANDs `*flag` over the live ranks of `comm`: every survivor gets the same value, even
// when ranks fail during the call (which then also returns an error, on every survivor).
Status AgreeOnFlag(MPI_Comm comm, int* flag);

}  // namespace mpi
}  // namespace horde

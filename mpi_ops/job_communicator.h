#pragma once

#include <mpi.h>

#include <vector>

#include "core/api.h"
#include "horde/status.h"

namespace horde {
namespace mpi {

// The communicator of the job's live ranks, from which every runtime's communicators
// are made (see MpiContext): a duplicate of MPI_COMM_WORLD (made by the first call,
// collective like MpiContext::Create) until a rank fails, then the survivors' one that
// ShrinkJob made. One per process, as MPI_COMM_WORLD is.
MPI_Comm JobCommunicator();

// Re-forms the job from its live ranks after a rank failure (see rank_failures.h):
// shrinks JobCommunicator() and agrees that every survivor has the new one, shrinking
// again when another rank fails meanwhile. `*previous_ranks` gets, for each rank of the
// new job, its rank in the job before. Collective over the survivors; every runtime on
// the old communicators must have stopped.
Status ShrinkJob(std::vector<int>* previous_ranks);

// Whether `ok` holds on every rank of the job, the same answer on all of them even when
// ranks fail meanwhile (then false). False also revokes every runtime's communicators,
// so that whatever was built on the failed attempt stops at once.
bool AgreeJobFormed(bool ok);

// Tests: makes `comm` (this process's, from MPI_COMM_WORLD) the job's communicator, as
// ShrinkJob does, so that a job numbered otherwise than MPI_COMM_WORLD can be tested
// without a rank failing. Only while no runtime runs; the job owns `comm` from now.
void AdoptJobCommunicator(MPI_Comm comm);

// core/api.h's JobReform over the three above and MpiContext::RevokeAll.
JobReform JobReformOverMpi();

}  // namespace mpi
}  // namespace horde

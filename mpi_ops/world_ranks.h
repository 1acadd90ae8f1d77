#pragma once

#include <mpi.h>

#include <vector>

namespace horde {
namespace mpi {

// The MPI_COMM_WORLD rank of each rank of `comm`, in comm's order: the numbering the
// job was started with, which horderun maps to hosts. A communicator of the whole job
// numbers its ranks the same way until a rank fails; once the survivors have re-formed
// the job (job_communicator.h), its ranks are renumbered and messages must translate.
// Local: no messages.
std::vector<int> WorldRanksOf(MPI_Comm comm);

// Whether `world_ranks` (from WorldRanksOf) is 0, 1, ..., n-1: nothing to translate.
bool NumberedAsWorld(const std::vector<int>& world_ranks);

}  // namespace mpi
}  // namespace horde

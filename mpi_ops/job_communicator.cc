#include "mpi_ops/job_communicator.h"

#include <string>

#include "core/logging.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/rank_failures.h"

namespace horde {
namespace mpi {
namespace {

// Made by the first MpiContext and replaced only by ShrinkJob, each of which runs while
// no runtime uses MPI. Never MPI_COMM_WORLD itself: revoking that one (as shrinking
// does) leaves Open MPI's MPI_Finalize waiting forever.
MPI_Comm g_job = MPI_COMM_NULL;

// Each rank of `comm` learns the previous job rank of every rank of it; ranks that fail
// meanwhile make it fail.
Status GatherPreviousRanks(MPI_Comm comm, int previous, std::vector<int>* previous_ranks) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  previous_ranks->assign(size, -1);
  return CheckMpi(MPI_Allgather(&previous, 1, MPI_INT, previous_ranks->data(), 1, MPI_INT, comm),
                  "MPI_Allgather");
}

// A job communicator replaced or given up by ShrinkJob holds failed ranks, and the
// failure may have cut operations on it short: kept, not freed (see KeepCommunicator).
void Release(MPI_Comm* comm) { KeepCommunicator(comm); }

}  // namespace

MPI_Comm JobCommunicator() {
  if (g_job == MPI_COMM_NULL) {
    MPI_Comm_dup(MPI_COMM_WORLD, &g_job);
    SetErrorHandler(g_job);
  }
  return g_job;
}

Status ShrinkJob(std::vector<int>* previous_ranks) {
  // Enough for every rank of a small job to fail during the recovery; each attempt that
  // fails does so because a rank died, so the loop cannot spin.
  constexpr int kAttempts = 8;
  int previous = 0;
  MPI_Comm_rank(JobCommunicator(), &previous);
  MPI_Comm current = g_job;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    MPI_Comm shrunk = MPI_COMM_NULL;
    Status status = ShrinkCommunicator(current, &shrunk);
    if (current != g_job) Release(&current);
    HORDE_RETURN_IF_ERROR(status);
    int gathered = GatherPreviousRanks(shrunk, previous, previous_ranks).ok() ? 1 : 0;
    // Ranks may see the gather end differently when one fails during it; the agreement
    // is the same on every survivor, and fails on all of them if a rank failed.
    const bool agreed = AgreeOnFlag(shrunk, &gathered).ok() && gathered == 1;
    if (agreed) {
      Release(&g_job);
      g_job = shrunk;
      MarkJobLostRanks();
      return Status::Ok();
    }
    HORDE_LOG(kWarning) << "another rank failed while the job was being re-formed (attempt "
                        << attempt << "); shrinking again";
    current = shrunk;
  }
  Release(&current);
  return Status::Internal(
      "could not re-form the job from its live ranks: ranks kept failing "
      "during " +
      std::to_string(kAttempts) + " attempts");
}

void AdoptJobCommunicator(MPI_Comm comm) {
  Release(&g_job);
  g_job = comm;
  SetErrorHandler(g_job);
}

bool AgreeJobFormed(bool ok) {
  int flag = ok ? 1 : 0;
  const bool agreed = AgreeOnFlag(g_job, &flag).ok() && flag == 1;
  if (!agreed) MpiContext::RevokeAll();
  return agreed;
}

JobReform JobReformOverMpi() {
  JobReform reform;
  reform.interrupt = [] { MpiContext::RevokeAll(); };
  reform.shrink = ShrinkJob;
  reform.agree = AgreeJobFormed;
  return reform;
}

}  // namespace mpi
}  // namespace horde

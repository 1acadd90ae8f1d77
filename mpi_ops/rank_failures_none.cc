#include "mpi_ops/rank_failures.h"

namespace horde {
namespace mpi {
namespace {

Status NoExtension(const char* call) {
  return Status::PreconditionError(
      std::string(call) +
      ": this horde was built against an MPI without the fault-tolerance extension (ULFM); "
      "a lost rank ends the job, and elastic jobs restart their ranks instead");
}

}  // namespace

bool SurvivesRankFailures() { return false; }

void SetErrorHandler(MPI_Comm comm) { MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); }

void RevokeCommunicator(MPI_Comm) {}

Status ShrinkCommunicator(MPI_Comm, MPI_Comm*) { return NoExtension("shrinking the job"); }

Status AgreeOnFlag(MPI_Comm, int*) { return NoExtension("agreeing after a rank failure"); }

}  // namespace mpi
}  // namespace horde

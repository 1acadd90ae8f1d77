#include "mpi_ops/rank_failures.h"

// After mpi.h, which it needs.
#include <mpi-ext.h>

#include <cstdlib>
#include <cstring>

#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {
namespace {

// Whether `code` says that a rank failed, or that a communicator was revoked after one did.
bool IsRankFailure(int code) {
  int error_class = MPI_SUCCESS;
  MPI_Error_class(code, &error_class);
  return error_class == MPIX_ERR_PROC_FAILED || error_class == MPIX_ERR_PROC_FAILED_PENDING ||
         error_class == MPIX_ERR_REVOKED;
}

void RevokeOnRankFailure(MPI_Comm* comm, int* code, ...) {
  if (IsRankFailure(*code)) MPIX_Comm_revoke(*comm);
}

MPI_Errhandler RevokingHandler() {
  static MPI_Errhandler handler = [] {
    MPI_Errhandler made = MPI_ERRHANDLER_NULL;
    MPI_Comm_create_errhandler(RevokeOnRankFailure, &made);
    return made;
  }();
  return handler;
}

}  // namespace

bool SurvivesRankFailures() {
  // What `mpirun --with-ft ulfm` sets for every rank; without it Open MPI ends the job
  // when a rank dies, extension or not.
  const char* enabled = std::getenv("OMPI_MCA_mpi_ft_enable");
  return enabled != nullptr &&
         (std::strcmp(enabled, "1") == 0 || std::strcmp(enabled, "true") == 0);
}

void SetErrorHandler(MPI_Comm comm) {
  MPI_Comm_set_errhandler(comm, SurvivesRankFailures() ? RevokingHandler() : MPI_ERRORS_RETURN);
}

void RevokeCommunicator(MPI_Comm comm) {
  if (SurvivesRankFailures()) MPIX_Comm_revoke(comm);  // fails only when already revoked
}

Status ShrinkCommunicator(MPI_Comm comm, MPI_Comm* shrunk) {
  MPIX_Comm_revoke(comm);
  HORDE_RETURN_IF_ERROR(CheckMpi(MPIX_Comm_shrink(comm, shrunk), "MPIX_Comm_shrink"));
  SetErrorHandler(*shrunk);
  return Status::Ok();
}

Status AgreeOnFlag(MPI_Comm comm, int* flag) {
  return CheckMpi(MPIX_Comm_agree(comm, flag), "MPIX_Comm_agree");
}

}  // namespace mpi
}  // namespace horde

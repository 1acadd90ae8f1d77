#pragma once

// The communicator of a bare-MPI test binary (bare_mpi_main.cc starts MPI): a duplicate of
// MPI_COMM_WORLD that returns errors, made once MPI has started and freed before MPI
// finalizes, with this rank's place in it. For the one test file of such a binary.
#include <gtest/gtest.h>
#include <mpi.h>

namespace horde {
namespace mpi {
namespace {

MPI_Comm g_comm = MPI_COMM_NULL;
int g_rank = 0;
int g_size = 1;

class CommEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(g_comm, &g_rank);
    MPI_Comm_size(g_comm, &g_size);
  }
  void TearDown() override { MPI_Comm_free(&g_comm); }
};
::testing::Environment* const kCommEnvironment = ::testing::AddGlobalTestEnvironment(
    new CommEnvironment);

}  // namespace
}  // namespace mpi
}  // namespace horde

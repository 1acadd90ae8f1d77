// main() of the MPI test binaries that build their own contexts and runtimes: MPI
// without horde's runtime around it.
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const int result = RUN_ALL_TESTS();
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return result;
}

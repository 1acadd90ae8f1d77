// main() of the MPI test binaries: starts horde over MPI, runs the tests, shuts down.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/api.h"
#include "mpi_ops/make_runtime.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Host tensors only: no device ops.
  horde::Status s = horde::InitRuntime(horde::mpi::RuntimeFactoryWith({}));
  if (!s.ok()) {
    fprintf(stderr, "horde init failed: %s\n", s.message().c_str());
    return 1;
  }
  int result = RUN_ALL_TESTS();
  horde::ShutdownRuntime();
  return result;
}

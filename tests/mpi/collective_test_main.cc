// main() of the per-collective test binaries: starts horde over MPI with a small fusion
// threshold (so tensors larger than the fusion buffer stay cheap), runs the tests,
// shuts down.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/api.h"
#include "mpi_ops/make_runtime.h"
#include "tests/mpi/collective_runner.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string threshold = std::to_string(horde::testing::kTestFusionThresholdBytes);
  setenv("HORDE_FUSION_THRESHOLD", threshold.c_str(), 1);
  // Host tensors only: no device ops.
  horde::Status s = horde::InitRuntime(horde::mpi::RuntimeFactoryWith({}));
  if (!s.ok()) {
    fprintf(stderr, "horde init failed: %s\n", s.message().c_str());
    return 1;
  }
  const int64_t in_use = horde::CurrentRuntime()->stats().fusion_threshold_bytes;
  if (in_use != horde::testing::kTestFusionThresholdBytes) {
    fprintf(stderr, "fusion threshold is %lld bytes, not the %s the tests are sized for\n",
            static_cast<long long>(in_use), threshold.c_str());
    horde::ShutdownRuntime();
    return 1;
  }
  int result = RUN_ALL_TESTS();
  horde::ShutdownRuntime();
  return result;
}

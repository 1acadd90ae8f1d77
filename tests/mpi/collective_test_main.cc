// main() of the per-collective test binaries: starts horde over MPI with a small fusion
// threshold (so tensors larger than the fusion buffer stay cheap), runs the tests,
// shuts down.
//
// With HORDE_TEST_TREES=1 (a variable of these tests only), every host allreduce but
// Adasum's and every broadcast runs over spanning trees (mpi_ops/tree_pipeline.h): the
// tree ops are registered first, with a plan over two islands of ranks whose margin of
// 0 makes them take every size, so the same exact checks cover the tree executor.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/api.h"
#include "mpi_ops/make_runtime.h"
#include "mpi_ops/mpi_tree_allreduce.h"
#include "mpi_ops/mpi_tree_broadcast.h"
#include "tests/mpi/collective_runner.h"
#include "topology/topology_plan.h"

namespace {

// Ranks in two halves, fast inside a half and slow between: several trees per plan.
std::shared_ptr<const horde::TopologyPlan> IslandsPlan(int size) {
  horde::LinkMatrix links(size);
  for (int i = 0; i < size; ++i) {
    for (int j = 0; j < size; ++j) {
      if (i != j)
        links.SetLink(i, j, horde::GbitToBytes((i < size / 2) == (j < size / 2) ? 2 : 0.25));
    }
  }
  horde::TopologyPlanOptions always;
  always.allreduce_margin = 0;
  always.broadcast_margin = 0;
  always.min_allreduce_bytes = 0;
  return std::make_shared<const horde::TopologyPlan>(links, always);
}

horde::mpi::DeviceOps TreeOps() {
  horde::mpi::DeviceOps trees;
  trees.register_ops = [](const horde::Config&, horde::OpRegistry* ops,
                          const std::shared_ptr<horde::mpi::MpiContext>& context,
                          const std::shared_ptr<horde::mpi::MpiDatatypes>& types,
                          const std::shared_ptr<horde::Timeline>& timeline) {
    auto plan = IslandsPlan(context->topology().size);
    ops->Register(
        horde::OpType::kAllreduce,
        std::make_unique<horde::mpi::MpiTreeAllreduce>(
            context, types, timeline, std::make_shared<horde::mpi::FusionBuffer>(context), plan));
    ops->Register(horde::OpType::kBroadcast,
                  std::make_unique<horde::mpi::MpiTreeBroadcast>(context, timeline, plan));
  };
  return trees;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string threshold = std::to_string(horde::testing::kTestFusionThresholdBytes);
  setenv("HORDE_FUSION_THRESHOLD", threshold.c_str(), 1);
  // Host tensors only: no device ops.
  const char* trees = std::getenv("HORDE_TEST_TREES");
  const bool on_trees = trees != nullptr && std::string(trees) == "1";
  horde::Status s = horde::InitRuntime(
      horde::mpi::RuntimeFactoryWith(on_trees ? TreeOps() : horde::mpi::DeviceOps{}));
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

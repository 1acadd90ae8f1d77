// main() of the per-collective test binaries: starts horde over MPI with a small fusion
// threshold (so tensors larger than the fusion buffer stay cheap), runs the tests,
// shuts down.
//
// With HORDE_TEST_TREES=1 (a variable of these tests only), every host allreduce but
// Adasum's and every broadcast runs over spanning trees (mpi_ops/tree_pipeline.h): the
// tree ops are registered first, with a plan over two islands of ranks whose margin of
// 0 makes them take every size, so the same exact checks cover the tree executor. With
// HORDE_TEST_TREES=ring, every such allreduce runs on the ring in rank order
// (mpi_ops/ring_allreduce.h): a plan over a switch without latency, which never takes
// trees.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/api.h"
#include "mpi_ops/make_runtime.h"
#include "mpi_ops/mpi_planned_allreduce.h"
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

// One switch, no latency: the ring beats recursive doubling on three ranks or more at
// every size (two stay on MPI's); trees never pass the margin.
std::shared_ptr<const horde::TopologyPlan> RingPlan(int size) {
  horde::LinkMatrix links(size);
  for (int i = 0; i < size; ++i) {
    for (int j = 0; j < size; ++j) {
      if (i != j) links.SetLink(i, j, horde::GbitToBytes(1));
    }
  }
  horde::TopologyPlanOptions ring;
  ring.allreduce_margin = 1e9;
  ring.broadcast_margin = 1e9;
  ring.min_allreduce_bytes = 0;
  ring.min_latency_seconds = 0;
  return std::make_shared<const horde::TopologyPlan>(links, ring);
}

horde::mpi::DeviceOps PlannedOps(bool ring) {
  horde::mpi::DeviceOps trees;
  trees.register_ops = [ring](const horde::Config&, horde::OpRegistry* ops,
                              const std::shared_ptr<horde::mpi::MpiContext>& context,
                              const std::shared_ptr<horde::mpi::MpiDatatypes>& types,
                              const std::shared_ptr<horde::Timeline>& timeline) {
    const int size = context->topology().size;
    auto plan = ring ? RingPlan(size) : IslandsPlan(size);
    ops->Register(
        horde::OpType::kAllreduce,
        std::make_unique<horde::mpi::MpiPlannedAllreduce>(
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
  const std::string planned = trees != nullptr ? trees : "";
  horde::Status s = horde::InitRuntime(horde::mpi::RuntimeFactoryWith(
      planned == "1" || planned == "ring" ? PlannedOps(planned == "ring")
                                          : horde::mpi::DeviceOps{}));
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

// When the planner picks trees over ring, recursive doubling and binomial broadcast.
#include "topology/topology_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/cpp/link_graphs.h"
#include "topology/collective_cost.h"

namespace horde {
namespace {

constexpr int64_t k16MiB = 16 << 20;

TEST(TopologyPlan, WithoutLinksNeverTrees) {
  const TopologyPlan plan;
  EXPECT_TRUE(plan.trees().empty());
  EXPECT_FALSE(plan.TreesForAllreduce(k16MiB, 4));
  EXPECT_FALSE(plan.TreesForBroadcast(k16MiB, 4, 0));
  EXPECT_EQ(plan.AllreduceThresholdBytes(), -1);
  EXPECT_EQ(plan.Describe(), "topology plan: 0 ranks, no trees (nothing to send)\n");
}

TEST(TopologyPlan, OneRankOrDisconnectedRanksNeverTrees) {
  for (const LinkMatrix& links : {Complete(1, 10), Islands({0, 0, 1, 1}, 2, 0)}) {
    const TopologyPlan plan(links);
    EXPECT_TRUE(plan.trees().empty());
    EXPECT_FALSE(plan.TreesForAllreduce(k16MiB, 4));
    EXPECT_FALSE(plan.TreesForBroadcast(k16MiB, 4, 0));
    EXPECT_EQ(plan.AllreduceThresholdBytes(), -1);
  }
  EXPECT_EQ(TopologyPlan(Islands({0, 0, 1, 1}, 2, 0)).Describe(),
            "topology plan: 4 ranks, no trees (the links do not connect every rank)\n");
}

TEST(TopologyPlan, ASwitchUsesTreesThatTieTheRingForLargeTensorsOnly) {
  // Every rank behind one NIC of B on a switch: the ring is optimal, and trees that carry
  // each NIC's share as fast tie it (MPI's default may not be its ring: trees are kept);
  // small tensors, where the trees' fill costs more, stay on MPI.
  for (int n : {4, 6}) {
    LinkMatrix links = Complete(n, 1, 1);
    links.set_latency_seconds(20e-6);
    const TopologyPlan plan(links);
    const double trees = TreesAllreduceSeconds(links, plan.trees(), k16MiB, 4);
    const double ring = RingAllreduceSeconds(links, k16MiB);
    EXPECT_GE(trees, ring * (1 - 1e-9)) << n;
    EXPECT_EQ(plan.TreesForAllreduce(k16MiB, 4), trees * 0.95 < ring) << n;
    EXPECT_FALSE(plan.TreesForAllreduce(64 << 10, 4)) << n;
    // MPI's scatter-allgather broadcast also uses every NIC fully.
    EXPECT_FALSE(plan.TreesForBroadcast(8 << 20, 1, 1)) << n;
  }
  // Four ranks: two paths carry each NIC's share, within 5% of the ring (their fill).
  LinkMatrix four = Complete(4, 1, 1);
  four.set_latency_seconds(20e-6);
  const TopologyPlan plan(four);
  EXPECT_LE(TreesAllreduceSeconds(four, plan.trees(), k16MiB, 4),
            RingAllreduceSeconds(four, k16MiB) * 1.05);
  EXPECT_TRUE(plan.TreesForAllreduce(k16MiB, 4));
}

TEST(TopologyPlan, AMatrixWithoutLatencyStillPaysMpisCostPerMessage) {
  // Latency 0 would make trees of tiny chunks look free: the plan's floor keeps 4 KiB on
  // MPI, and the plan's matrix says what it assumed.
  const TopologyPlan plan(Complete(4, 10, 10));
  EXPECT_DOUBLE_EQ(plan.links().latency_seconds(), TopologyPlanOptions().min_latency_seconds);
  EXPECT_FALSE(plan.TreesForAllreduce(4 << 10, 4));
}

TEST(TopologyPlan, IslandsUseTreesOverTheSlowLinks) {
  for (const std::vector<int>& island : {std::vector<int>{0, 0, 1, 1}, {0, 1, 0, 1}}) {
    LinkMatrix links = Islands(island, 2, 0.25);
    links.set_latency_seconds(40e-6);
    const TopologyPlan plan(links);
    EXPECT_TRUE(plan.TreesForAllreduce(k16MiB, 4));
    const double trees = TreesAllreduceSeconds(links, plan.trees(), k16MiB, 4);
    EXPECT_GT(RingAllreduceSeconds(links, k16MiB), 3 * trees);
    EXPECT_GT(RecursiveDoublingAllreduceSeconds(links, k16MiB), 1.5 * trees);
    EXPECT_TRUE(plan.TreesForBroadcast(k16MiB, 4, 0));
  }
}

TEST(TopologyPlan, ALoneSlowHostUsesTrees) {
  const TopologyPlan plan(SlowHost(6, 10, 4));
  EXPECT_TRUE(plan.TreesForAllreduce(k16MiB, 4));
}

TEST(TopologyPlan, FragmentedDgx1UsesTreesWhereTheRingCrossesPcie) {
  for (const std::vector<int>& gpus : {std::vector<int>{0, 1, 2, 5, 6}, {1, 4, 5, 6}}) {
    const LinkMatrix links = Dgx1V(10).Restricted(gpus);
    const TopologyPlan plan(links);
    EXPECT_TRUE(plan.TreesForAllreduce(k16MiB, 4)) << gpus.size() << " GPUs";
    EXPECT_GT(RingAllreduceSeconds(links, k16MiB),
              2 * TreesAllreduceSeconds(links, plan.trees(), k16MiB, 4));
  }
}

TEST(TopologyPlan, TreesRootedAtTheBroadcastsRootKeepTheirRates) {
  const TopologyPlan plan(Islands({0, 0, 1, 1}, 2, 0.25));
  for (int root = 0; root < 4; ++root) {
    const std::vector<SpanningTree> rooted = plan.TreesRootedAt(root);
    ASSERT_EQ(rooted.size(), plan.trees().size());
    for (size_t t = 0; t < rooted.size(); ++t) {
      EXPECT_EQ(rooted[t].root, root);
      EXPECT_EQ(rooted[t].parent[root], -1);
      EXPECT_EQ(rooted[t].rate, plan.trees()[t].rate);
    }
  }
}

TEST(TopologyPlan, TheThresholdIsWhereTreesStartToWin) {
  LinkMatrix links = Islands({0, 0, 1, 1}, 2, 0.25);
  links.set_latency_seconds(40e-6);
  const TopologyPlan plan(links);
  const int64_t threshold = plan.AllreduceThresholdBytes();
  ASSERT_GE(threshold, 4 << 10);
  ASSERT_LE(threshold, k16MiB);
  EXPECT_TRUE(plan.TreesForAllreduce(threshold, 4));
  if (threshold > (4 << 10)) {
    EXPECT_FALSE(plan.TreesForAllreduce(threshold / 2, 4));
  }
  // A larger margin asks for more.
  const TopologyPlan strict(links, {4, 100.0});
  EXPECT_EQ(strict.AllreduceThresholdBytes(), -1);
}

TEST(TopologyPlan, DescribeListsTreesRatesBoundAndPredictions) {
  const std::string text = TopologyPlan(Islands({0, 0, 1, 1}, 2, 0.25)).Describe();
  EXPECT_NE(text.find("topology plan: 4 ranks, 4 trees carrying 1 Gbit/s together; allreduce "
                      "bound 1 Gbit/s\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  tree 0: root "), std::string::npos) << text;
  EXPECT_NE(text.find(", 0.25 Gbit/s\n"), std::string::npos) << text;
  for (const char* size : {"1 MiB:", "4 MiB:", "16 MiB:", "64 MiB:"}) {
    EXPECT_NE(text.find(size), std::string::npos) << size << "\n" << text;
  }
  EXPECT_NE(text.find("trees win allreduce (float32) from "), std::string::npos) << text;
  const std::string racks = TopologyPlan(Racks({0, 1, 0, 1}, 1, 0.5)).Describe();
  EXPECT_NE(racks.find("  racks 0 1 0 1; uplinks 0.5 0.5 Gbit/s\n"), std::string::npos) << racks;
}

}  // namespace
}  // namespace horde

// When the planner picks trees, its ring or MPI's algorithms (recursive doubling, binomial
// broadcast).
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

TEST(TopologyPlan, ASwitchRunsLargeTensorsOnTheRingInRankOrder) {
  // Every rank behind one NIC of B on a switch: the ring is optimal and trees at best tie
  // it, so large tensors take the ring in rank order (safe where racks hide behind uplinks
  // as fast as one flow); small ones, where its 2(n - 1) steps cost more, stay on MPI.
  for (int n : {3, 4, 6, 8}) {
    LinkMatrix links = Complete(n, 1, 1);
    links.set_latency_seconds(20e-6);
    const TopologyPlan plan(links);
    EXPECT_GE(TreesAllreduceSeconds(links, plan.trees(), k16MiB, 4),
              RingAllreduceSeconds(links, k16MiB) * (1 - 1e-9))
        << n;
    EXPECT_EQ(plan.AllreduceFor(k16MiB, 4), TopologyPlan::Allreduce::kRing) << n;
    EXPECT_EQ(plan.AllreduceFor(32 << 10, 4), TopologyPlan::Allreduce::kMpi) << n;
    // MPI's scatter-allgather broadcast also uses every NIC fully.
    EXPECT_FALSE(plan.TreesForBroadcast(8 << 20, 1, 1)) << n;
  }
  // On two ranks the ring is recursive doubling's one exchange: MPI's own runs it.
  EXPECT_EQ(TopologyPlan(Complete(2, 1, 1)).AllreduceFor(k16MiB, 4), TopologyPlan::Allreduce::kMpi);
  LinkMatrix four = Complete(4, 1, 1);
  four.set_latency_seconds(20e-6);
  EXPECT_NE(TopologyPlan(four).Describe().find("ring in rank order runs allreduce (float32) from "),
            std::string::npos);
}

TEST(TopologyPlan, RacksInRankOrderTakeTheRingWhereItCrossesEachUplinkTwice) {
  // Two racks of two in rank order: the ring crosses each uplink once each way, as the
  // trees must; crossed, the ring crosses them at every step and the trees win.
  LinkMatrix ordered = Racks({0, 0, 1, 1}, 1, 0.5);
  ordered.set_latency_seconds(20e-6);
  EXPECT_NE(TopologyPlan(ordered).AllreduceFor(k16MiB, 4), TopologyPlan::Allreduce::kMpi);
  LinkMatrix crossed = Racks({0, 1, 0, 1}, 1, 0.5);
  crossed.set_latency_seconds(20e-6);
  EXPECT_EQ(TopologyPlan(crossed).AllreduceFor(k16MiB, 4), TopologyPlan::Allreduce::kTrees);
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

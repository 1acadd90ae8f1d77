// Predicted seconds of ring, recursive doubling, binomial and tree collectives, and how
// the executor splits a tensor across trees.
#include "topology/collective_cost.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "tests/cpp/link_graphs.h"

namespace horde {
namespace {

constexpr double kB = 1e9;       // bytes per second of every link below
constexpr int64_t kS = 1 << 24;  // bytes of the tensor

LinkMatrix Uniform(int n, double latency = 0) {
  LinkMatrix m(n);
  m.set_latency_seconds(latency);
  for (int u = 0; u < n; ++u) {
    for (int v = 0; v < n; ++v) {
      if (u != v) m.SetLink(u, v, kB);
    }
  }
  return m;
}

TEST(CollectiveCost, RingTakesTwoNMinusOneStepsOfItsSlowestLink) {
  EXPECT_NEAR(RingAllreduceSeconds(Uniform(4), kS), 6.0 * kS / 4 / kB, 1e-12);
  EXPECT_NEAR(RingAllreduceSeconds(Uniform(4, 1e-5), kS), 6 * (1e-5 + kS / 4 / kB), 1e-12);
  LinkMatrix slow = Uniform(4);
  slow.SetLink(2, 3, kB / 10);   // on the ring
  slow.SetLink(3, 1, kB / 100);  // not on it
  EXPECT_NEAR(RingAllreduceSeconds(slow, kS), 6 * (kS / 4 / (kB / 10)), 1e-12);
  // A NIC no slower than the link changes nothing: each rank sends to one neighbour.
  LinkMatrix nic = Uniform(4);
  nic.SetNic(1, kB);
  EXPECT_NEAR(RingAllreduceSeconds(nic, kS), RingAllreduceSeconds(Uniform(4), kS), 1e-12);
  slow.SetLink(3, 0, 0);
  EXPECT_EQ(RingAllreduceSeconds(slow, kS), HUGE_VAL);
  EXPECT_EQ(RingAllreduceSeconds(Uniform(1), kS), 0);
}

TEST(CollectiveCost, RingStepsShareTheUplinksTheyCross) {
  // Two racks of two, NICs B, uplinks B/2. In rack order one ring edge leaves each rack:
  // S/4 at B/2 a step; crossed (0 1 0 1) all four do, two per uplink: S/4 at B/4.
  const LinkMatrix in_order = Racks({0, 0, 1, 1}, 8e-9 * kB, 4e-9 * kB);
  EXPECT_NEAR(RingAllreduceSeconds(in_order, kS), 6 * (kS / 4 / (kB / 2)), 1e-12);
  const LinkMatrix crossed = Racks({0, 1, 0, 1}, 8e-9 * kB, 4e-9 * kB);
  EXPECT_NEAR(RingAllreduceSeconds(crossed, kS), 6 * (kS / 4 / (kB / 4)), 1e-12);
}

TEST(CollectiveCost, RecursiveDoublingHalvesThenDoubles) {
  // Four ranks: S/2 then S/4 each way, and back.
  EXPECT_NEAR(RecursiveDoublingAllreduceSeconds(Uniform(4, 1e-5), kS),
              2 * (2e-5 + (kS / 2.0 + kS / 4.0) / kB), 1e-12);
  // Three: rank 0 folds into 1 (S), ranks 1 and 2 exchange S/2 twice, 1 unfolds to 0 (S).
  EXPECT_NEAR(RecursiveDoublingAllreduceSeconds(Uniform(3), kS), 3.0 * kS / kB, 1e-12);
  // The first step pairs 0-1 and 2-3; a slow 1 -> 3 only slows the second.
  LinkMatrix slow = Uniform(4);
  slow.SetLink(1, 3, kB / 2);
  EXPECT_NEAR(RecursiveDoublingAllreduceSeconds(slow, kS), 2 * (kS / 2.0 + kS / 4.0 * 2) / kB,
              1e-12);
  EXPECT_EQ(RecursiveDoublingAllreduceSeconds(Uniform(1), kS), 0);
}

TEST(CollectiveCost, BinomialBroadcastSendsTheWholeMessageEachStep) {
  EXPECT_NEAR(BinomialBroadcastSeconds(Uniform(4, 1e-5), kS, 0), 2 * (1e-5 + kS / kB), 1e-12);
  EXPECT_NEAR(BinomialBroadcastSeconds(Uniform(5), kS, 3), 3.0 * kS / kB, 1e-12);
  // From root 1 of four, the first step goes to 3 (relative rank 2).
  LinkMatrix slow = Uniform(4);
  slow.SetLink(1, 3, kB / 4);
  EXPECT_NEAR(BinomialBroadcastSeconds(slow, kS, 1), 5.0 * kS / kB, 1e-12);
  EXPECT_EQ(BinomialBroadcastSeconds(Uniform(1), kS, 0), 0);
}

TEST(CollectiveCost, ScatterAllgatherBroadcastMovesTwoThirdsOfTheMessageTwiceOnFour) {
  // Scatter: 2 pieces, then 1; allgather: 3 steps of 1 piece. 6 pieces of S/4 in all.
  EXPECT_NEAR(ScatterAllgatherBroadcastSeconds(Uniform(4), kS, 1), 6.0 * kS / 4 / kB, 1e-12);
  EXPECT_EQ(ScatterAllgatherBroadcastSeconds(Uniform(1), kS, 0), 0);
}

TEST(CollectiveCost, TreesArePipelinesOfChunksPlusTheirFill) {
  const LinkMatrix links = Uniform(4, 1e-5);
  // The path 0 - 1 - 2 - 3 rooted at 1 (height 2) and the star around 2 (height 1).
  const std::vector<SpanningTree> trees = {{1, {1, -1, 1, 2}, 3 * kB / 4},
                                           {2, {2, 2, -1, 2}, kB / 4}};
  const int64_t count = kS / 4;
  const std::vector<int64_t> shares = SplitByRate(trees, count);
  ASSERT_EQ(shares, (std::vector<int64_t>{count * 3 / 4, count / 4}));
  auto seconds = [&](size_t t, int fills) {
    const int64_t chunk = ChunkElements(shares[t], 4, trees[t], 1e-5);
    const double chunks = std::ceil(static_cast<double>(shares[t]) / chunk);
    const double stage = 1e-5 + static_cast<double>(chunk * 4) / trees[t].rate;
    return (chunks + fills * trees[t].Height() - 1) * stage;
  };
  EXPECT_NEAR(TreesAllreduceSeconds(links, trees, kS, 4), std::max(seconds(0, 2), seconds(1, 2)),
              1e-12);
  EXPECT_NEAR(TreesBroadcastSeconds(links, trees, kS, 4), std::max(seconds(0, 1), seconds(1, 1)),
              1e-12);
  EXPECT_EQ(TreesAllreduceSeconds(links, {}, kS, 4), HUGE_VAL);
  EXPECT_EQ(TreesBroadcastSeconds(links, {}, kS, 4), HUGE_VAL);
}

TEST(CollectiveCost, SplitByRateIsProportionalInWholeElementsSummingToCount) {
  auto trees = [](std::vector<double> rates) {
    std::vector<SpanningTree> out;
    for (double rate : rates) out.push_back({0, {-1}, rate});
    return out;
  };
  EXPECT_EQ(SplitByRate(trees({1, 1, 1}), 10), (std::vector<int64_t>{4, 3, 3}));
  // Equal remainders: the lower tree first.
  EXPECT_EQ(SplitByRate(trees({3, 1}), 10), (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(SplitByRate(trees({1, 3}), 10), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(SplitByRate(trees({2, 1}), 0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(SplitByRate(trees({0, 0}), 5), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(SplitByRate({}, 5).empty());
  const std::vector<double> odd = {1.0 / 3, 0.1, 7e9, 2.5e9, 1e-3};
  for (int64_t count : {int64_t{1}, int64_t{997}, int64_t{1} << 40, (int64_t{1} << 53) - 1}) {
    const std::vector<int64_t> shares = SplitByRate(trees(odd), count);
    EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), int64_t{0}), count) << count;
    for (int64_t share : shares) EXPECT_GE(share, 0);
  }
}

TEST(CollectiveCost, ChunksBalanceLatencyAgainstFillWithinBoundsInWholeElements) {
  const SpanningTree path{1, {1, -1, 1, 2}, 1e8};  // height 2: the reduce's depth is 4
  // sqrt(share * latency * rate / depth): 4 MiB, 1 ms, 100 MB/s, 4 -> 324 KiB.
  const double best = std::sqrt((4 << 20) * 1e-3 * 1e8 / 4);
  EXPECT_EQ(ChunkElements(1 << 20, 4, path, 1e-3), static_cast<int64_t>(best) / 4);
  EXPECT_EQ(ChunkElements(int64_t{1} << 30, 4, path, 1e-3), kMaxChunkBytes / 4);  // at most
  EXPECT_EQ(ChunkElements(1 << 20, 4, path, 0), kMinChunkBytes / 4);  // no latency: the least
  EXPECT_EQ(ChunkElements(1000, 4, path, 1e-3), 1000);                // but not over the share
  EXPECT_EQ(ChunkElements(1 << 20, 3, path, 0), kMinChunkBytes / 3);  // whole elements
  EXPECT_EQ(ChunkElements(0, 4, path, 1e-3), 1);
  EXPECT_EQ(ChunkElements(10, 1 << 21, path, 1e-3), 1);  // an element over 1 MiB
}

}  // namespace
}  // namespace horde

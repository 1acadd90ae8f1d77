// The cut bounds on allreduce and broadcast rates, against known graphs and against an
// enumeration of every bipartition.
#include "topology/link_bounds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tests/cpp/link_graphs.h"

namespace horde {
namespace {

// min over bipartitions (A, B) of min(C(A->B), C(B->A)), C(A->B) the least of A's links
// into B, A's NICs (all limited) and B's NICs (all limited).
double EnumeratedAllreduceBound(const LinkMatrix& links) {
  const int n = links.size();
  auto capacity = [&](uint32_t from_set) {
    double sum = 0, from_nic = 0, to_nic = 0;
    bool from_limited = true, to_limited = true;
    for (int u = 0; u < n; ++u) {
      const bool in_from = (from_set >> u) & 1;
      const double nic = links.Nic(u);
      (in_from ? from_limited : to_limited) &= nic > 0;
      (in_from ? from_nic : to_nic) += nic;
      for (int v = 0; v < n; ++v) {
        if (in_from && !((from_set >> v) & 1)) sum += links.Link(u, v);
      }
    }
    if (from_limited) sum = std::min(sum, from_nic);
    if (to_limited) sum = std::min(sum, to_nic);
    return sum;
  };
  double bound = HUGE_VAL;
  const uint32_t all = (1u << n) - 1;
  for (uint32_t a = 1; a < all; a += 2) {  // rank 0 always in A
    bound = std::min({bound, capacity(a), capacity(all ^ a)});
  }
  return bound;
}

// A matrix of 1..9 Gbit/s links, about a third missing, and 1..9 Gbit/s NICs on about
// `nic_share` of the ranks, from a fixed seed.
LinkMatrix Scrambled(int n, uint64_t seed, bool symmetric, double nic_share) {
  LinkMatrix m(n);
  auto next = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(seed >> 11) / 9007199254740992.0;
  };
  for (int u = 0; u < n; ++u) {
    for (int v = symmetric ? u + 1 : 0; v < n; ++v) {
      if (u == v) continue;
      const double gbit = next() < 0.3 ? 0 : 1 + std::floor(9 * next());
      m.SetLink(u, v, GbitToBytes(gbit));
      if (symmetric) m.SetLink(v, u, GbitToBytes(gbit));
    }
    if (next() < nic_share) m.SetNic(u, GbitToBytes(1 + std::floor(9 * next())));
  }
  return m;
}

TEST(LinkBounds, AllreduceIsTheLeastCutInEitherDirection) {
  EXPECT_NEAR(AllreduceRateBound(Islands({0, 0, 1, 1}, 2, 0.25)), GbitToBytes(1), 1);
  EXPECT_NEAR(AllreduceRateBound(Islands({0, 1, 0, 1}, 2, 0.25)), GbitToBytes(1), 1);
  // The slower direction counts.
  LinkMatrix two(2);
  two.SetLink(0, 1, 10);
  two.SetLink(1, 0, 1);
  EXPECT_NEAR(AllreduceRateBound(two), 1, 1e-9);
}

TEST(LinkBounds, AllreduceIsBoundByTheVolumeEveryRankMovesTogether) {
  // A cut isolates a rank's three links (30 Gbit/s) or its NIC (10); but the ranks move
  // 2(n-1) = 6 times the tensor between them: 4 x 30 / 6 without NICs, 4 x 10 / 6 (a
  // ring's rate on a switch) with them.
  EXPECT_NEAR(AllreduceRateBound(Complete(4, 10)), GbitToBytes(20), 1);
  EXPECT_NEAR(AllreduceRateBound(Complete(4, 10, 10)), GbitToBytes(10) * 4 / 6, 1);
  EXPECT_NEAR(AllreduceVolumeBound(Complete(4, 10, 10)), GbitToBytes(10) * 4 / 6, 1);
  // Two ranks: each sends the tensor once, so only the cut binds.
  EXPECT_NEAR(AllreduceRateBound(Complete(2, 10)), GbitToBytes(10), 1);
}

TEST(LinkBounds, AllreduceMatchesEveryBipartitionEnumerated) {
  // The flows' cuts may also pass through NICs, but a cut through the NICs of ranks K
  // costs at least the bipartition (K, the rest): the two minima agree (the volume term
  // taken alike on both sides).
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const int n = 2 + static_cast<int>(seed % 8);
    const LinkMatrix links = Scrambled(n, seed, seed % 2 == 0, (seed % 5) / 4.0);
    const double enumerated = std::min(EnumeratedAllreduceBound(links),
                                       AllreduceVolumeBound(links));
    EXPECT_NEAR(AllreduceRateBound(links), enumerated, 1e-9 * enumerated + 1e-6) << seed;
  }
}

TEST(LinkBounds, ARacksUplinkCarriesTheWholeTensorEachWay) {
  // Two racks of two, NICs 1 Gbit/s: uplinks of 0.5 bound it; of 2, the NICs' volume
  // (4 B / 6); three racks (2, 2, 1) at 0.4: the lone host's rack, 0.4.
  EXPECT_NEAR(AllreduceRateBound(Racks({0, 0, 1, 1}, 1, 0.5)), GbitToBytes(0.5), 1);
  EXPECT_NEAR(AllreduceRateBound(Racks({0, 1, 0, 1}, 1, 0.5)), GbitToBytes(0.5), 1);
  EXPECT_NEAR(AllreduceRateBound(Racks({0, 0, 1, 1}, 1, 2)), GbitToBytes(1) * 4 / 6, 1);
  EXPECT_NEAR(AllreduceRateBound(Racks({0, 1, 2, 0, 1}, 1, 0.4)), GbitToBytes(0.4), 1);
}

TEST(LinkBounds, OneRankIsUnboundedAndDisconnectedRanksAreZero) {
  EXPECT_EQ(AllreduceRateBound(Complete(1, 1)), HUGE_VAL);
  EXPECT_EQ(BroadcastRateBound(Complete(1, 1), 0), HUGE_VAL);
  EXPECT_EQ(AllreduceRateBound(Islands({0, 0, 1, 1}, 2, 0)), 0);
  EXPECT_EQ(BroadcastRateBound(Islands({0, 0, 1, 1}, 2, 0), 0), 0);
}

TEST(LinkBounds, BroadcastIsTheLeastFlowFromTheRoot) {
  // From rank 0 of the islands: four slow links leave its island.
  EXPECT_NEAR(BroadcastRateBound(Islands({0, 0, 1, 1}, 2, 0.25), 0), GbitToBytes(1), 1);
  // A rank reached by one link only.
  LinkMatrix chain = Complete(3, 10);
  chain.SetLink(0, 2, 0);
  chain.SetLink(1, 2, GbitToBytes(3));
  EXPECT_NEAR(BroadcastRateBound(chain, 0), GbitToBytes(3), 1);
  // The root's NIC limits it.
  EXPECT_NEAR(BroadcastRateBound(Complete(4, 10, 5), 2), GbitToBytes(5), 1);
  // Only the root's sending side counts: rank 2 can still send, so from it all is fast.
  EXPECT_NEAR(BroadcastRateBound(chain, 2), GbitToBytes(20), 1);
}

}  // namespace
}  // namespace horde

#include "topology/pair_rounds.h"

#include <gtest/gtest.h>

#include <set>

namespace horde {
namespace {

TEST(PairRounds, EveryPairMeetsOnceAndNoRankTwiceInARound) {
  for (int n = 1; n <= 9; ++n) {
    const auto rounds = PairRounds(n);
    EXPECT_EQ(rounds.size(), n < 2 ? 0u : static_cast<size_t>(n % 2 == 0 ? n - 1 : n)) << n;
    std::set<std::pair<int, int>> met;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second) << "rank " << a << " twice in a round of " << n;
        EXPECT_TRUE(busy.insert(b).second) << "rank " << b << " twice in a round of " << n;
        EXPECT_TRUE(met.insert({a, b}).second) << a << "-" << b << " met twice, n=" << n;
      }
    }
    EXPECT_EQ(met.size(), static_cast<size_t>(n * (n - 1) / 2)) << n;
  }
}

TEST(PairRounds, FourRanks) {
  const auto rounds = PairRounds(4);
  using Round = std::vector<std::pair<int, int>>;
  EXPECT_EQ(rounds[0], (Round{{0, 3}, {1, 2}}));
  EXPECT_EQ(rounds[1], (Round{{0, 2}, {1, 3}}));
  EXPECT_EQ(rounds[2], (Round{{0, 1}, {2, 3}}));
}

}  // namespace
}  // namespace horde

// The small packing linear program that gives the kept trees their exact rates.
#include "topology/packing_lp.h"

#include <gtest/gtest.h>

#include <vector>

namespace horde {
namespace {

TEST(PackingLp, FindsTheLargestTotalAndThePricesOfItsResources) {
  // x0 + x2 <= 2 and x1 + x2 <= 3: the total is 5, with x2 = 0; each resource more
  // would carry one more.
  const Packing p = MaxPacking({{1, 0}, {0, 1}, {1, 1}}, {2, 3});
  EXPECT_DOUBLE_EQ(p.total, 5);
  EXPECT_EQ(p.rates, (std::vector<double>{2, 3, 0}));
  EXPECT_DOUBLE_EQ(p.prices[0], 1);
  EXPECT_DOUBLE_EQ(p.prices[1], 1);
}

TEST(PackingLp, AResourceWithRoomToSpareIsFree) {
  // 2 x <= 4e9 binds; x <= 1e10 does not.
  const Packing p = MaxPacking({{2, 1}}, {4e9, 1e10});
  EXPECT_DOUBLE_EQ(p.total, 2e9);
  EXPECT_DOUBLE_EQ(p.prices[0], 0.5);
  EXPECT_EQ(p.prices[1], 0);
}

TEST(PackingLp, SharesAResourceWhereThatCarriesMost) {
  // Three candidates over three resources, each pair sharing one: a triangle of links
  // and its three two-link trees. Each tree at 1/2 of the capacity: 3/2 in all.
  const Packing p = MaxPacking({{1, 1, 0}, {0, 1, 1}, {1, 0, 1}}, {1, 1, 1});
  EXPECT_NEAR(p.total, 1.5, 1e-12);
  for (double rate : p.rates) EXPECT_NEAR(rate, 0.5, 1e-12);
}

}  // namespace
}  // namespace horde

// A spanning tree's shape: children, height, and the same tree rooted elsewhere.
#include "topology/spanning_tree.h"

#include <gtest/gtest.h>

#include <vector>

namespace horde {
namespace {

TEST(SpanningTree, ChildrenAscendAndHeightCountsEdgesOfTheLongestPath) {
  // 3 - 2 - 1 - 0 and 1 - 4, rooted at 1.
  const SpanningTree tree{1, {1, -1, 1, 2, 1}, 5.0};
  EXPECT_EQ(tree.Children(1), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(tree.Children(2), (std::vector<int>{3}));
  EXPECT_TRUE(tree.Children(3).empty());
  EXPECT_EQ(tree.Height(), 2);
  EXPECT_EQ((SpanningTree{0, {-1}, 0}.Height()), 0);
}

TEST(SpanningTree, RootedAtKeepsTheEdgesAndRate) {
  const SpanningTree tree{1, {1, -1, 1, 2, 1}, 5.0};
  const SpanningTree at3 = tree.RootedAt(3);
  EXPECT_EQ(at3.root, 3);
  EXPECT_EQ(at3.parent, (std::vector<int>{1, 2, 3, -1, 1}));
  EXPECT_EQ(at3.rate, 5.0);
  EXPECT_EQ(at3.Height(), 3);
  EXPECT_EQ(at3.RootedAt(1).parent, tree.parent);
}

TEST(SpanningTree, CenterHasTheLeastHeightTheLowerRankOnATie) {
  // The path 0 - 1 - 2 - 3: ranks 1 and 2 both reach every rank in two edges.
  const SpanningTree path{0, {-1, 0, 1, 2}, 1.0};
  EXPECT_EQ(path.Center(), 1);
  // A star's center is its hub, wherever it is rooted.
  const SpanningTree star{0, {-1, 0, 0, 0}, 1.0};
  EXPECT_EQ(star.RootedAt(2).Center(), 0);
}

}  // namespace
}  // namespace horde

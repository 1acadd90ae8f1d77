#pragma once

#include <vector>

namespace horde {

// One tree of a topology-aware collective (topology/tree_packing.h): allreduce reduces up it
// to the root and broadcasts back down; broadcast only goes down.
struct SpanningTree {
  int root = 0;
  std::vector<int> parent;  // parent[root] == -1; a tree over all ranks 0..parent.size()-1
  double rate = 0;          // bytes per second of the collective's data this tree carries

  // Ascending.
  std::vector<int> Children(int node) const;
  // Edges on the longest root-to-leaf path.
  int Height() const;
  // The same edges and rate, rooted at `new_root`.
  SpanningTree RootedAt(int new_root) const;
  // The root of least Height (the lower rank on a tie): the tree's center.
  int Center() const;
};

}  // namespace horde

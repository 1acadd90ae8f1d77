#include "topology/spanning_tree.h"

#include <algorithm>

namespace horde {
namespace {

// Each node's neighbours, ascending.
std::vector<std::vector<int>> Neighbours(const std::vector<int>& parent) {
  std::vector<std::vector<int>> adjacent(parent.size());
  for (size_t v = 0; v < parent.size(); ++v) {
    if (parent[v] < 0) continue;
    adjacent[v].push_back(parent[v]);
    adjacent[parent[v]].push_back(static_cast<int>(v));
  }
  for (auto& list : adjacent) std::sort(list.begin(), list.end());
  return adjacent;
}

// Parents of the tree given by `adjacent` rooted at `root`, by breadth-first search;
// `height` gets the greatest depth.
std::vector<int> ParentsFrom(const std::vector<std::vector<int>>& adjacent, int root, int* height) {
  std::vector<int> parent(adjacent.size(), -1), depth(adjacent.size(), 0), queue = {root};
  *height = 0;
  for (size_t next = 0; next < queue.size(); ++next) {
    const int u = queue[next];
    *height = std::max(*height, depth[u]);
    for (int v : adjacent[u]) {
      if (v == root || parent[v] >= 0) continue;
      parent[v] = u;
      depth[v] = depth[u] + 1;
      queue.push_back(v);
    }
  }
  return parent;
}

}  // namespace

std::vector<int> SpanningTree::Children(int node) const {
  std::vector<int> children;
  for (size_t v = 0; v < parent.size(); ++v) {
    if (parent[v] == node) children.push_back(static_cast<int>(v));
  }
  return children;
}

int SpanningTree::Height() const {
  int height = 0;
  for (size_t v = 0; v < parent.size(); ++v) {
    int depth = 0;
    for (int u = static_cast<int>(v); parent[u] >= 0; u = parent[u]) ++depth;
    height = std::max(height, depth);
  }
  return height;
}

SpanningTree SpanningTree::RootedAt(int new_root) const {
  int height = 0;
  return {new_root, ParentsFrom(Neighbours(parent), new_root, &height), rate};
}

int SpanningTree::Center() const {
  const auto adjacent = Neighbours(parent);
  int best = root, least = -1;
  for (size_t v = 0; v < parent.size(); ++v) {
    int height = 0;
    ParentsFrom(adjacent, static_cast<int>(v), &height);
    if (least < 0 || height < least) {
      least = height;
      best = static_cast<int>(v);
    }
  }
  return best;
}

}  // namespace horde

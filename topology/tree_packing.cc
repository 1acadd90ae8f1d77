#include "topology/tree_packing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "topology/packing_lp.h"

namespace horde {
namespace {

// Garg–Könemann's accuracy: smaller finds better candidates, in more iterations.
constexpr double kEpsilon = 0.1;
// Bounds the candidate search: 16 ranks finish within it; 64 stop here (about 0.1 s).
constexpr int kMaxIterations = 4096;
// Candidates given to the linear program, per tree kept.
constexpr size_t kCandidatesPerTree = 8;
// Bounds the improving rounds after the candidates' best.
constexpr int kMaxImprovements = 64;

// `items` by `key`, largest first, equal keys in their order: std::sort over indices,
// since std::stable_sort's temporary buffer trips AddressSanitizer's alloc-dealloc check
// with GCC 12's libstdc++.
template <typename T, typename Key>
std::vector<T> DescendingBy(std::vector<T> items, Key key) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double ka = key(items[a]), kb = key(items[b]);
    return ka != kb ? ka > kb : a < b;
  });
  std::vector<T> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(std::move(items[i]));
  return sorted;
}

// The packing's resources: each link {u < v} (both directions), then each NIC-limited
// rank, then each rack's uplink, with their capacities. A tree edge between two racks
// passes both racks' uplinks, each way.
struct Resources {
  int n = 0;
  std::vector<int> edge_of;    // n x n: the resource of link {u,v}, -1: none
  std::vector<int> nic_of;     // per rank: its NIC's resource, -1: no limit
  std::vector<int> uplink_of;  // per rank: its rack's uplink resource, -1: no racks
  std::vector<double> capacity;

  explicit Resources(const LinkMatrix& links)
      : n(links.size()), edge_of(static_cast<size_t>(n) * n, -1), nic_of(n, -1), uplink_of(n, -1) {
    for (int u = 0; u < n; ++u) {
      for (int v = u + 1; v < n; ++v) {
        const double c = std::min(links.Link(u, v), links.Link(v, u));
        if (c <= 0) continue;
        edge_of[u * n + v] = edge_of[v * n + u] = static_cast<int>(capacity.size());
        capacity.push_back(c);
      }
    }
    for (int v = 0; v < n; ++v) {
      if (links.Nic(v) <= 0) continue;
      nic_of[v] = static_cast<int>(capacity.size());
      capacity.push_back(links.Nic(v));
    }
    const int first_uplink = static_cast<int>(capacity.size());
    for (int rack = 0; rack < links.racks(); ++rack) capacity.push_back(links.Uplink(rack));
    for (int v = 0; v < n && links.racks() > 0; ++v) uplink_of[v] = first_uplink + links.Rack(v);
  }

  int Edge(int u, int v) const { return edge_of[u * n + v]; }
  bool CrossesRacks(int u, int v) const { return uplink_of[u] != uplink_of[v]; }

  // What a tree uses of the resources it uses: (resource, count), ascending.
  std::vector<std::pair<int, int>> Usage(const std::vector<int>& parent) const {
    std::map<int, int> usage;
    for (int v = 0; v < n; ++v) {
      if (parent[v] < 0) continue;
      ++usage[Edge(v, parent[v])];
      for (int end : {v, parent[v]}) {
        if (nic_of[end] >= 0) ++usage[nic_of[end]];
        if (CrossesRacks(v, parent[v])) ++usage[uplink_of[end]];
      }
    }
    return {usage.begin(), usage.end()};
  }

  // Prim's minimum spanning tree from rank 0 under the resources' lengths: a link weighs
  // its length plus its NIC-limited ends' (a tree's cost at a NIC is its degree there
  // times the NIC's length), plus both racks' uplinks when it joins two racks. The lower rank joins
  // first on a tie, and a rank's parent is the latest-joined of its equally light neighbours: equal
  // links make paths, not the stars that load one rank's links with every tree. {} when not all
  // ranks connect.
  std::vector<int> MinimumSpanningTree(const std::vector<double>& length) const {
    std::vector<double> nic_length(n, 0.0), key(n, HUGE_VAL);
    for (int v = 0; v < n; ++v) {
      if (nic_of[v] >= 0) nic_length[v] = length[nic_of[v]];
    }
    std::vector<int> parent(n, -1);
    std::vector<char> in_tree(n, 0);
    key[0] = 0;
    for (int added = 0; added < n; ++added) {
      int u = -1;
      for (int v = 0; v < n; ++v) {
        if (!in_tree[v] && key[v] < HUGE_VAL && (u < 0 || key[v] < key[u])) u = v;
      }
      if (u < 0) return {};
      in_tree[u] = 1;
      const int* edges = &edge_of[static_cast<size_t>(u) * n];
      for (int v = 0; v < n; ++v) {
        if (in_tree[v] || edges[v] < 0) continue;
        double w = length[edges[v]] + nic_length[u] + nic_length[v];
        if (CrossesRacks(u, v)) w += length[uplink_of[u]] + length[uplink_of[v]];
        if (w <= key[v]) {
          key[v] = w;
          parent[v] = u;
        }
      }
    }
    return parent;
  }
};

struct Candidate {
  std::vector<int> parent;  // rooted at 0
  double carried = 0;       // what Garg–Könemann routed over it, unscaled
};

// Garg–Könemann: each iteration routes the most the lightest tree can carry and
// lengthens what it used in proportion; the trees it found, heaviest first (the earlier
// found on a tie). {} when not all ranks connect.
std::vector<Candidate> Candidates(const Resources& resources) {
  const std::vector<double>& capacity = resources.capacity;
  if (capacity.empty()) return {};
  const double m = static_cast<double>(capacity.size());
  const double delta = (1 + kEpsilon) / std::pow((1 + kEpsilon) * m, 1 / kEpsilon);
  std::vector<double> length(capacity.size());
  for (size_t i = 0; i < capacity.size(); ++i) length[i] = delta / capacity[i];
  double total = m * delta;  // sum of capacity x length; the search ends at 1
  std::vector<Candidate> found;
  std::map<std::vector<int>, size_t> index;
  for (int iteration = 0; iteration < kMaxIterations && total < 1; ++iteration) {
    std::vector<int> parent = resources.MinimumSpanningTree(length);
    if (parent.empty()) return {};
    const auto usage = resources.Usage(parent);
    double amount = HUGE_VAL;
    for (const auto& [i, count] : usage) amount = std::min(amount, capacity[i] / count);
    auto [it, added] = index.emplace(std::move(parent), found.size());
    if (added) found.push_back({it->first, 0});
    found[it->second].carried += amount;
    for (const auto& [i, count] : usage) {
      const double grown = length[i] * kEpsilon * amount * count / capacity[i];
      length[i] += grown;
      total += grown * capacity[i];
    }
  }
  return DescendingBy(std::move(found), [](const Candidate& c) { return c.carried; });
}

// Trees kept, what each uses of every resource, and their exact rates.
struct Kept {
  std::vector<std::vector<int>> parents;
  std::vector<std::vector<double>> usage;
  Packing packing;

  void Add(const Resources& resources, std::vector<int> parent) {
    usage.emplace_back(resources.capacity.size(), 0.0);
    for (const auto& [i, count] : resources.Usage(parent)) usage.back()[i] = count;
    parents.push_back(std::move(parent));
  }
  void Erase(size_t j) {
    parents.erase(parents.begin() + static_cast<std::ptrdiff_t>(j));
    usage.erase(usage.begin() + static_cast<std::ptrdiff_t>(j));
    packing.rates.erase(packing.rates.begin() + static_cast<std::ptrdiff_t>(j));
  }
  // Solves the rates, and drops the trees that carry nothing (to rounding).
  void Solve(const Resources& resources) {
    packing = MaxPacking(usage, resources.capacity);
    for (size_t j = parents.size(); j-- > 0;) {
      if (packing.rates[j] <= 1e-9 * packing.total) Erase(j);
    }
  }
  // Drops the tree of least rate (the later on a tie) and solves again.
  void DropLeast(const Resources& resources) {
    size_t least = 0;
    for (size_t j = 0; j < parents.size(); ++j) {
      if (packing.rates[j] <= packing.rates[least]) least = j;
    }
    Erase(least);
    Solve(resources);
  }
  // Drops the tree whose absence costs least (the later on a tie), solved again.
  void DropCheapest(const Resources& resources) {
    Kept best;
    for (size_t j = 0; j < parents.size(); ++j) {
      Kept without = *this;
      without.Erase(j);
      without.Solve(resources);
      if (j == 0 || without.packing.total >= best.packing.total) best = std::move(without);
    }
    *this = std::move(best);
  }
};

// Column generation within `max_trees`: the minimum spanning tree under the program's
// prices is the tree that would raise the total most; it joins the kept trees, the one
// whose absence then costs least leaves, and the change stays if the total grew. Stops
// at a local optimum: exchanging more than one tree at a time might still do better.
void Improve(const Resources& resources, size_t max_trees, Kept* kept) {
  for (int round = 0; round < kMaxImprovements; ++round) {
    std::vector<int> parent = resources.MinimumSpanningTree(kept->packing.prices);
    double cost = 0;
    for (const auto& [i, count] : resources.Usage(parent)) {
      cost += count * kept->packing.prices[i];
    }
    if (cost >= 1 - 1e-9) return;  // no tree raises the total: the packing is optimal
    Kept more = *kept;
    more.Add(resources, std::move(parent));
    more.Solve(resources);
    if (more.parents.size() > max_trees) more.DropCheapest(resources);
    if (more.packing.total <= kept->packing.total * (1 + 1e-9)) return;
    *kept = std::move(more);
  }
}

}  // namespace

std::vector<SpanningTree> PackSpanningTrees(const LinkMatrix& links, int max_trees) {
  if (links.size() < 2) return {};
  const Resources resources(links);
  const std::vector<Candidate> candidates = Candidates(resources);
  if (candidates.empty()) return {};
  const size_t keep = static_cast<size_t>(std::max(max_trees, 1));
  Kept kept;
  for (size_t j = 0; j < candidates.size() && j < keep * kCandidatesPerTree; ++j) {
    kept.Add(resources, candidates[j].parent);
  }
  kept.Solve(resources);
  while (kept.parents.size() > keep) kept.DropLeast(resources);
  Improve(resources, keep, &kept);
  std::vector<SpanningTree> trees;
  for (size_t j = 0; j < kept.parents.size(); ++j) {
    const SpanningTree tree{0, kept.parents[j], kept.packing.rates[j]};
    trees.push_back(tree.RootedAt(tree.Center()));
  }
  return DescendingBy(std::move(trees), [](const SpanningTree& t) { return t.rate; });
}

}  // namespace horde

#include "topology/rack_finder.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace horde {

namespace {

// The groups of ranks joined by pairs at or above `fast` (numbered by their lowest rank),
// or empty unless there are at least two and every group of several hosts is mostly a
// clique: more than half of its pairs fast. A group held together by a few fast pairs is two racks
// that one pair between them read high (concurrent flows share an uplink unfairly).
std::vector<int> GroupsAbove(int n, const std::function<double(int, int)>& pair_rate, double fast) {
  std::vector<int> leader(n);
  std::iota(leader.begin(), leader.end(), 0);
  auto find = [&](int v) {
    while (leader[v] != v) v = leader[v] = leader[leader[v]];
    return v;
  };
  for (int u = 0; u < n; ++u) {
    for (int v = u + 1; v < n; ++v) {
      if (pair_rate(u, v) >= fast) {
        const int a = find(u), b = find(v);
        leader[std::max(a, b)] = std::min(a, b);
      }
    }
  }
  std::vector<int> rack(n, -1), number(n, -1);
  int racks = 0;
  for (int v = 0; v < n; ++v) {
    const int root = find(v);
    if (number[root] < 0) number[root] = racks++;
    rack[v] = number[root];
  }
  if (racks < 2) return {};
  std::vector<int> pairs(racks, 0), fast_pairs(racks, 0);
  for (int u = 0; u < n; ++u) {
    for (int v = u + 1; v < n; ++v) {
      if (rack[u] != rack[v]) continue;
      ++pairs[rack[u]];
      fast_pairs[rack[u]] += pair_rate(u, v) >= fast ? 1 : 0;
    }
  }
  for (int r = 0; r < racks; ++r) {
    if (pairs[r] > 0 && 2 * fast_pairs[r] <= pairs[r]) return {};
  }
  return rack;
}

}  // namespace

std::vector<int> FindRacks(const LinkMatrix& links, double min_gap) {
  const int n = links.size();
  auto pair_rate = [&](int u, int v) { return std::min(links.Link(u, v), links.Link(v, u)); };
  std::vector<double> rates;
  for (int u = 0; u < n; ++u) {
    for (int v = u + 1; v < n; ++v) rates.push_back(pair_rate(u, v));
  }
  std::sort(rates.begin(), rates.end(), std::greater<double>());
  if (rates.empty() || rates[0] <= 0) return {};
  // Candidate lines between fast and slow pairs: the gaps between the sorted rates of at
  // least `min_gap`, the widest first.
  std::vector<std::pair<double, double>> gaps;  // (ratio, the faster rate)
  for (size_t i = 0; i + 1 < rates.size() && rates[i + 1] > 0; ++i) {
    const double gap = rates[i] / rates[i + 1];
    if (gap >= min_gap) gaps.emplace_back(gap, rates[i]);
  }
  std::sort(gaps.begin(), gaps.end(), std::greater<>());
  for (const auto& [gap, fast] : gaps) {
    std::vector<int> rack = GroupsAbove(n, pair_rate, fast);
    if (!rack.empty()) return rack;
  }
  return {};
}

bool RecordRacks(const std::vector<int>& rack, std::vector<double> uplink, LinkMatrix* links) {
  const int n = links->size();
  if (rack.size() != static_cast<size_t>(n) || uplink.empty()) return false;
  for (size_t r = 0; r < uplink.size(); ++r) {
    double links_in = 0, fastest = 0;
    for (int u = 0; u < n; ++u) {
      for (int v = 0; v < n; ++v) {
        if (rack[u] == rack[v] ||
            (rack[u] != static_cast<int>(r) && rack[v] != static_cast<int>(r))) {
          continue;
        }
        if (rack[v] == static_cast<int>(r)) links_in += links->Link(u, v);
        fastest = std::max(fastest, links->Link(u, v));
      }
    }
    if (!(uplink[r] > 0 && uplink[r] < 0.8 * links_in)) return false;
    uplink[r] = std::max(uplink[r], fastest);
  }
  links->SetRacks(rack, std::move(uplink));
  return true;
}

}  // namespace horde

#include "topology/rack_finder.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace horde {

std::vector<int> FindRacks(const LinkMatrix& links, double min_gap) {
  const int n = links.size();
  auto pair_rate = [&](int u, int v) { return std::min(links.Link(u, v), links.Link(v, u)); };
  std::vector<double> rates;
  for (int u = 0; u < n; ++u) {
    for (int v = u + 1; v < n; ++v) rates.push_back(pair_rate(u, v));
  }
  std::sort(rates.begin(), rates.end(), std::greater<double>());
  if (rates.empty() || rates[0] <= 0) return {};
  // The fast pairs: those at or above the upper side of the widest gap.
  double fast = 0, widest = min_gap;
  for (size_t i = 0; i + 1 < rates.size() && rates[i + 1] > 0; ++i) {
    const double gap = rates[i] / rates[i + 1];
    if (gap >= widest) {
      widest = gap;
      fast = rates[i];
    }
  }
  if (fast <= 0) return {};
  // Union-find over the fast links; each group is named by its lowest rank.
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
  return rack;
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

#include "topology/link_bounds.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace horde {
namespace {

// Maximum flows over `links`, each rank v split into an in node 2v and an out node 2v+1
// joined by its NIC (unlimited without one): a cut may pass through a rank's NIC. With
// racks, traffic between two racks leaves through one rack's uplink and enters through
// the other's (each a pair of nodes joined by the uplink's rate, one pair per direction),
// and the links between ranks of different racks are not used.
class FlowNetwork {
 public:
  explicit FlowNetwork(const LinkMatrix& links) : nodes_(2 * links.size() + 4 * links.racks()) {
    const int n = links.size();
    double total = 0;
    for (int u = 0; u < n; ++u) {
      for (int v = 0; v < n; ++v) total += u == v ? 0 : links.Link(u, v);
    }
    // A flow never exceeds all the links together: that is "unlimited".
    const double unlimited = total + 1;
    capacity_.assign(static_cast<size_t>(nodes_) * nodes_, 0.0);
    // Rack k's nodes: leaving (2n + 4k -> +1), entering (2n + 4k + 2 -> +3).
    auto leaving = [n](int rack) { return 2 * n + 4 * rack; };
    auto entering = [n](int rack) { return 2 * n + 4 * rack + 2; };
    for (int k = 0; k < links.racks(); ++k) {
      at(capacity_, leaving(k), leaving(k) + 1) = links.Uplink(k);
      at(capacity_, entering(k), entering(k) + 1) = links.Uplink(k);
      for (int other = 0; other < links.racks(); ++other) {
        if (other != k) at(capacity_, leaving(k) + 1, entering(other)) = unlimited;
      }
    }
    for (int u = 0; u < n; ++u) {
      at(capacity_, 2 * u, 2 * u + 1) = links.Nic(u) > 0 ? links.Nic(u) : unlimited;
      if (links.racks() > 0) {
        at(capacity_, 2 * u + 1, leaving(links.Rack(u))) = unlimited;
        at(capacity_, entering(links.Rack(u)) + 1, 2 * u) = unlimited;
      }
      for (int v = 0; v < n; ++v) {
        if (u != v && links.Rack(u) == links.Rack(v)) {
          at(capacity_, 2 * u + 1, 2 * v) = links.Link(u, v);
        }
      }
    }
    tolerance_ = 1e-12 * (total + 1);
  }

  // From rank `from` (before its NIC) to rank `to` (after its NIC), by Dinic's algorithm.
  double MaxFlow(int from, int to) {
    residual_ = capacity_;
    const int source = 2 * from, sink = 2 * to + 1;
    double flow = 0;
    while (Levels(source, sink)) {
      next_.assign(nodes_, 0);
      for (double pushed; (pushed = Push(source, sink, HUGE_VAL)) > 0;) flow += pushed;
    }
    return flow;
  }

 private:
  double& at(std::vector<double>& m, int u, int v) {
    return m[static_cast<size_t>(u) * nodes_ + v];
  }

  // Breadth-first levels over residual edges; whether the sink is reached.
  bool Levels(int source, int sink) {
    level_.assign(nodes_, -1);
    level_[source] = 0;
    std::vector<int> queue = {source};
    for (size_t i = 0; i < queue.size(); ++i) {
      const int u = queue[i];
      for (int v = 0; v < nodes_; ++v) {
        if (level_[v] >= 0 || at(residual_, u, v) <= tolerance_) continue;
        level_[v] = level_[u] + 1;
        queue.push_back(v);
      }
    }
    return level_[sink] >= 0;
  }

  // One augmenting path of the level graph from u, at most `limit`; 0 when none is left.
  double Push(int u, int sink, double limit) {
    if (u == sink) return limit;
    for (int& v = next_[u]; v < nodes_; ++v) {
      double& r = at(residual_, u, v);
      if (level_[v] != level_[u] + 1 || r <= tolerance_) continue;
      const double pushed = Push(v, sink, std::min(limit, r));
      if (pushed > 0) {
        r -= pushed;
        at(residual_, v, u) += pushed;
        return pushed;
      }
    }
    return 0;
  }

  int nodes_;
  double tolerance_ = 0;
  std::vector<double> capacity_, residual_;
  std::vector<int> level_, next_;
};

}  // namespace

double AllreduceVolumeBound(const LinkMatrix& links) {
  const int n = links.size();
  if (n < 2) return HUGE_VAL;
  double sent = 0, received = 0;
  for (int v = 0; v < n; ++v) {
    double out = 0, in = 0;
    for (int u = 0; u < n; ++u) {
      out += u == v ? 0 : links.Link(v, u);
      in += u == v ? 0 : links.Link(u, v);
    }
    const double nic = links.Nic(v) > 0 ? links.Nic(v) : HUGE_VAL;
    sent += std::min(out, nic);
    received += std::min(in, nic);
  }
  return std::min(sent, received) / (2.0 * (n - 1));
}

double AllreduceRateBound(const LinkMatrix& links) {
  if (links.size() < 2) return HUGE_VAL;
  FlowNetwork network(links);
  double bound = AllreduceVolumeBound(links);
  for (int v = 1; v < links.size(); ++v) {
    bound = std::min({bound, network.MaxFlow(0, v), network.MaxFlow(v, 0)});
  }
  return bound;
}

double BroadcastRateBound(const LinkMatrix& links, int root) {
  if (links.size() < 2) return HUGE_VAL;
  FlowNetwork network(links);
  double bound = HUGE_VAL;
  for (int v = 0; v < links.size(); ++v) {
    if (v != root) bound = std::min(bound, network.MaxFlow(root, v));
  }
  return bound;
}

}  // namespace horde

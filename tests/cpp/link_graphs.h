// Link matrices the planner's tests share: a switch, islands, a slow host, a DGX-1.
#pragma once

#include <algorithm>
#include <vector>

#include "topology/link_matrix.h"
#include "topology/spanning_tree.h"

namespace horde {

// Every pair linked at `gbit` both ways; each rank's NIC at `nic_gbit` (0: none).
inline LinkMatrix Complete(int n, double gbit, double nic_gbit = 0) {
  LinkMatrix m(n);
  for (int u = 0; u < n; ++u) {
    m.SetNic(u, GbitToBytes(nic_gbit));
    for (int v = 0; v < n; ++v) {
      if (u != v) m.SetLink(u, v, GbitToBytes(gbit));
    }
  }
  return m;
}

// Ranks on the same island (island[rank]) linked at `fast` Gbit/s, others at `slow`.
inline LinkMatrix Islands(const std::vector<int>& island, double fast, double slow) {
  const int n = static_cast<int>(island.size());
  LinkMatrix m(n);
  for (int u = 0; u < n; ++u) {
    for (int v = 0; v < n; ++v) {
      if (u != v) m.SetLink(u, v, GbitToBytes(island[u] == island[v] ? fast : slow));
    }
  }
  return m;
}

// Hosts behind switches: every pair at the NIC rate `nic_gbit`, each rank's NIC at it,
// rank r in rack rack[r], and every rack's uplink at `uplink_gbit`.
inline LinkMatrix Racks(const std::vector<int>& rack, double nic_gbit, double uplink_gbit) {
  LinkMatrix m = Complete(static_cast<int>(rack.size()), nic_gbit, nic_gbit);
  const int racks = 1 + *std::max_element(rack.begin(), rack.end());
  m.SetRacks(rack, std::vector<double>(racks, GbitToBytes(uplink_gbit)));
  return m;
}

// Complete(n, gbit) but rank `slow`'s links at a tenth of it.
inline LinkMatrix SlowHost(int n, double gbit, int slow) {
  LinkMatrix m = Complete(n, gbit);
  for (int v = 0; v < n; ++v) {
    if (v == slow) continue;
    m.SetLink(slow, v, GbitToBytes(gbit / 10));
    m.SetLink(v, slow, GbitToBytes(gbit / 10));
  }
  return m;
}

// A DGX-1 with V100s: the hybrid cube-mesh NVLink of nvidia-smi topo -m, two fully
// connected quads {0..3}, {4..7} and cross links i - i+4, six NVLinks per GPU, so some
// pairs have two (NV2). A link is 25 GB/s a direction, as in the Blink paper. Pairs
// without NVLink get `pcie_gb` GB/s (0: no link): the PCIe switches and CPU link they
// really share cannot be a NIC here, since a NIC would cap the NVLinks too.
inline LinkMatrix Dgx1V(double pcie_gb) {
  const int nvlinks[8][8] = {{0, 1, 1, 2, 2, 0, 0, 0}, {1, 0, 2, 1, 0, 2, 0, 0},
                             {1, 2, 0, 2, 0, 0, 1, 0}, {2, 1, 2, 0, 0, 0, 0, 1},
                             {2, 0, 0, 0, 0, 1, 1, 2}, {0, 2, 0, 0, 1, 0, 2, 1},
                             {0, 0, 1, 0, 1, 2, 0, 2}, {0, 0, 0, 1, 2, 1, 2, 0}};
  LinkMatrix m(8);
  m.set_latency_seconds(10e-6);
  for (int u = 0; u < 8; ++u) {
    for (int v = 0; v < 8; ++v) {
      if (u != v) m.SetLink(u, v, nvlinks[u][v] > 0 ? nvlinks[u][v] * 25e9 : pcie_gb * 1e9);
    }
  }
  return m;
}

inline double TotalRate(const std::vector<SpanningTree>& trees) {
  double total = 0;
  for (const SpanningTree& tree : trees) total += tree.rate;
  return total;
}

}  // namespace horde

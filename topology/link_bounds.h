#pragma once

#include "topology/link_matrix.h"

namespace horde {

// Cut bounds on collective rates (bytes of the tensor per second), printed beside
// benchmarks and in TopologyPlan::Describe(): what no algorithm can beat over `links`.
// The cuts are exact at any size, by maximum flows (Dinic's algorithm) over the ranks split
// into NIC-in and NIC-out nodes, so that a NIC is a node capacity: the most a rank sends,
// and receives, in all; a rack's uplink is a node capacity each way. One rank: +infinity (nothing
// to send); ranks the links do not connect: 0.

// Allreduce, the least of two bounds. The cut: across every bipartition (A, B) each side
// must receive all S bytes of a result that depends on the other side's data, so the
// rate is at most
//   min over bipartitions of min(C(A->B), C(B->A)),
// C(A->B) the least of: the links from A to B, the NICs of A (when all are limited),
// the NICs of B (when all are limited). Computed as the least of maxflow(0 -> v) and
// maxflow(v -> 0) over ranks v != 0 (2(n-1) flows rather than 2^n bipartitions): a
// flow's cut through the NICs of ranks K costs at least the bipartition (K, the rest),
// and each C(A->B) above is a flow's cut, so the two minima are the same.
// And the volume: every element of the result gathers n contributions and reaches n
// ranks, which takes at least 2(n-1) one-way transfers of it (the gossip bound), so the
// ranks together send, and receive, at least 2(n-1) times the tensor, at most as fast as
// all their NICs (or links) allow. On a switch of equal NICs B: nB / (2(n-1)), a ring's.
// With racks, the cut around a rack gives its uplink: the whole tensor passes it each way.
double AllreduceRateBound(const LinkMatrix& links);
// The volume term alone.
double AllreduceVolumeBound(const LinkMatrix& links);

// Broadcast from `root`: min over v != root of maxflow(root -> v) on the directed links,
// which packed trees achieve without NIC limits (Edmonds).
double BroadcastRateBound(const LinkMatrix& links, int root);

}  // namespace horde

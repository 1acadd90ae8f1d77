#pragma once

#include <vector>

#include "topology/link_matrix.h"

namespace horde {

// Racks from a probe's measurements (mpi_ops/link_probe.h). Hosts behind one switch reach
// each other at their NICs' rate; hosts in other racks share an oversubscribed uplink, so
// their pairs read clearly slower even measured alone.

// Groups the ranks joined by fast links (connected components, numbered by their lowest
// rank). A pair's rate is the slower of its two directions; the fast pairs are those
// above a gap between the sorted rates of at least `min_gap` (a fixed fraction of the
// fastest pair would let one pair that read high on a busy host push the others of its
// rack below the line): the widest such gap whose fast pairs make at least two groups,
// each with more than half of its pairs fast (a pair between racks that read high, as
// flows sharing an uplink unfairly do, would otherwise join them). Empty when no gap
// gives that: one switch, or nothing to tell apart.
std::vector<int> FindRacks(const LinkMatrix& links, double min_gap = 4.0 / 3);

// Records `rack` (one per rank) with `uplink` (each rack's measured rate in, all its
// ranks receiving from every other rack at once) in `links`, only when every rack's
// uplink is clearly (below 0.8 of) what the links into it add up to; else the racks are
// islands of direct links, which the matrix already describes, and `links` is left alone.
// The links between racks keep their measured rates (what a pair got while other pairs
// of its round shared the uplink: low, never above what one flow can get). An uplink is
// taken to carry at least the fastest single flow measured across it. Returns whether it
// recorded the racks.
bool RecordRacks(const std::vector<int>& rack, std::vector<double> uplink, LinkMatrix* links);

}  // namespace horde

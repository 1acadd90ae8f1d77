#pragma once

#include "horde/status.h"
#include "mpi_ops/mpi_context.h"
#include "topology/topology_plan.h"

namespace horde {
namespace mpi {

// What a race between the plan's trees and the ring in rank order (on two ranks, MPI's
// allreduce) gave: each one's best time (the slowest rank's) for one allreduce of
// `bytes`, and whether it ran at all.
struct RaceResult {
  bool raced = false;
  double trees_seconds = 0;
  double ring_seconds = 0;
  // Trees must win by the plan's own margin: where they only tie the ring (a switch),
  // the ring in rank order is the safer of the two.
  bool trees_won() const { return !raced || trees_seconds * kMargin <= ring_seconds; }
  static constexpr double kMargin = 1.1;
};

// Times an allreduce of `bytes` of float32 on the plan's trees and on the ring, over the
// job's links (the world, or with several ranks a host each local rank's communicator
// across the hosts, all at once, as the hierarchical allreduce runs them), when the plan
// takes trees for that size. The probe prices the links a pair at a time and a few all at once;
// racks whose uplinks run as fast as one flow look like one switch to it, and there trees that
// cross the uplinks at will lost to the ring 1.8x (6 hosts in racks of 3). Collective over the
// world; every rank gets the same result.
Status RaceTreesAgainstRing(const MpiContext& context, const TopologyPlan& plan, int64_t bytes,
                            RaceResult* result);

}  // namespace mpi
}  // namespace horde

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/link_matrix.h"
#include "topology/spanning_tree.h"

namespace horde {

struct TopologyPlanOptions {
  // 0: as many trees as ranks, from 4 to 16. Behind a switch the NICs' bound takes about
  // one path per rank (each rank an end of as many as the others); four trees reached
  // 0.54 of 0.6 Gbit/s on 6 ranks, six reached it.
  int max_trees = 0;
  // Allreduce runs on the trees when they are predicted at least this many times as fast
  // as the better of ring and recursive doubling. Behind one switch trees and ring both
  // reach the NICs' bound, and a ring in rank order is the safer of the two: racks whose
  // uplinks run as fast as one flow look like one switch to the probe, and there trees
  // that cross the uplinks at will ran 1.8x slower than the ring (6 hosts in racks of 3).
  double allreduce_margin = 1.1;
  // Where trees do not win, large allreduces run on horde's ring when it is predicted at
  // most this many times slower than recursive doubling. The model's recursive doubling
  // is Rabenseifner's, which behind a switch ties the ring in bandwidth and saves latency,
  // but MPI's default for large buffers is often neither (Open MPI 4.1 behind one switch
  // of 4 to 8 hosts: 1.4x to 3.2x slower than its own ring, which horde's ring matches).
  double ring_margin = 1.1;
  // Broadcast runs on the trees when they are predicted this many times faster than
  // MPI's binomial and scatter-allgather broadcasts, whose default is a good one.
  double broadcast_margin = 1.25;
  // Every message costs at least this much (MPI's own work per message), whatever the
  // matrix's latency.
  double min_latency_seconds = 20e-6;
  // Smaller allreduces stay on MPI, whose small-message algorithms send one message a
  // step: the model prices a tiny tensor's trees no slower than recursive doubling, but
  // their executor does more per message than the model counts.
  int64_t min_allreduce_bytes = 64 << 10;
};

// Whether to run a collective over packed spanning trees (topology/tree_packing.h), on a ring
// in rank order (allreduce), or leave it to MPI's algorithms, by predicted time
// (topology/collective_cost.h). Every rank builds it from the same matrix, so every rank
// decides alike.
class TopologyPlan {
 public:
  // No links known: never trees.
  TopologyPlan() = default;
  // Packs the trees, once. The plan's matrix has at least the options' latency.
  explicit TopologyPlan(LinkMatrix links, const TopologyPlanOptions& options = {});

  const LinkMatrix& links() const { return links_; }
  const std::vector<SpanningTree>& trees() const { return trees_; }

  // How an allreduce of `bytes` runs: on the trees when they are predicted faster, by
  // allreduce_margin, than the better of ring and recursive doubling; else on horde's ring
  // in rank order where it is predicted within ring_margin of recursive doubling; else,
  // and below min_allreduce_bytes, with MPI's own allreduce.
  enum class Allreduce { kMpi, kRing, kTrees };
  Allreduce AllreduceFor(int64_t bytes, int element_size) const;
  bool TreesForAllreduce(int64_t bytes, int element_size) const {
    return AllreduceFor(bytes, element_size) == Allreduce::kTrees;
  }
  // The trees rooted at `root` (same edges and rates) predicted faster, by broadcast_margin,
  // than the better of MPI's binomial and scatter-allgather broadcasts.
  bool TreesForBroadcast(int64_t bytes, int element_size, int root) const;
  // Allreduces smaller than this stay on MPI (TopologyPlanOptions::min_allreduce_bytes).
  int64_t min_allreduce_bytes() const { return options_.min_allreduce_bytes; }
  // For broadcast: the trees with the same edges and rates, each rooted at `root`.
  std::vector<SpanningTree> TreesRootedAt(int root) const;
  // For the log: the smallest power-of-two size in bytes, from 4 KiB to 1 GiB, from which
  // trees win allreduce of float32, or -1 if they never do.
  int64_t AllreduceThresholdBytes() const;
  // Lines for the log and `horde-topology plan`: each tree (root, parents, rate), the
  // trees' total rate, the cut bound (topology/link_bounds.h), and the predicted allreduce
  // milliseconds of ring, recursive doubling, trees and the bound at 1, 4, 16 and 64 MiB,
  // and the sizes that run on trees and on the ring.
  std::string Describe() const;

 private:
  std::string RingLine() const;

  LinkMatrix links_;
  TopologyPlanOptions options_;
  std::vector<SpanningTree> trees_;
};

}  // namespace horde

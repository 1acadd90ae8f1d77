#pragma once

#include "core/link_matrix.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {

// Measures the links between the ranks of `context` (one rank per host), so that every
// rank ends with the same matrix: the measurements are agreed, not taken apart.
//   1. Pairs, in rounds where no rank is in two pairs (core/pair_rounds.h): a few small
//      ping-pongs give the latency, then both ends send kProbeBytes at once, twice, the
//      faster kept, so each direction is measured while the other is busy, as a tree's
//      links are used.
//   2. Every rank sends to all others at once, each share in proportion to the pair's
//      rate: what a rank moves in total shows a NIC its links share (a limit only when
//      it is clearly below the sum of its links).
// Each entry is measured by one rank and spread with one MPI_Allreduce (max). Costs about
// (n - 1) rounds of twice the slowest pair's kProbeBytes.
class LinkProbe {
 public:
  static constexpr int kProbeBytes = 2 << 20;

  explicit LinkProbe(const MpiContext& context) : context_(context) {}
  Status Measure(LinkMatrix* links);

 private:
  // Measures the pair's latency and rate from `peer` to this rank into the tables.
  Status MeasurePair(int peer, std::vector<double>* rates, double* latency);
  Status MeasureNic(const LinkMatrix& links, double* nic);

  const MpiContext& context_;
};

}  // namespace mpi
}  // namespace horde

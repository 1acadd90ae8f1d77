#pragma once

#include "mpi_ops/mpi_context.h"
#include "topology/link_matrix.h"

namespace horde {
namespace mpi {

// Measures the links between the ranks of `comm` (one rank per host), so that every rank
// of it ends with the same matrix: the measurements are agreed, not taken apart.
//   1. Pairs, in rounds where no rank is in two pairs (topology/pair_rounds.h): a few small
//      ping-pongs give the latency, then both ends send kProbeBytes at once, twice, the
//      faster kept, so each direction is measured while the other is busy, as a tree's
//      links are used.
//   2. Every rank sends kAllAtOnceBytes to all others at once, each share in proportion
//      to the pair's rate: what a rank receives in total, timed to its last byte, shows
//      a NIC its links share (a limit only when it is clearly below the sum of its links).
//   3. Racks (topology/rack_finder.h): where the pairs fall into groups that reach each other
//      clearly slower than within, every rank sends kAllAtOnceBytes to the ranks of other
//      racks at once; what each rack's ranks receive together is its uplink, recorded
//      when it binds.
// Each entry is measured by one rank and spread with MPI_Allreduce (max). Costs about
// (n - 1) rounds of twice the slowest pair's kProbeBytes, and two or four all-at-once
// transfers of kAllAtOnceBytes.
class LinkProbe {
 public:
  static constexpr int kProbeBytes = 2 << 20;
  static constexpr int kAllAtOnceBytes = 8 << 20;

  // Nothing else may use `comm` meanwhile (the probe's tags are its own only on it).
  explicit LinkProbe(MPI_Comm comm);
  Status Measure(LinkMatrix* links);

 private:
  // The pair's latency (the largest so far kept), and its rate from `peer` to this rank.
  Status MeasureLatency(int peer, double* latency);
  Status MeasureRate(int peer, std::vector<double>* rates);
  Status MeasureNic(const LinkMatrix& links, double* nic);
  // Each rack's rate in (rack: one per rank), every rank taking part.
  Status MeasureUplinks(const std::vector<int>& rack, std::vector<double>* uplink);
  // Sends and receives these bytes to and from each rank at once, twice; the bytes
  // received and the fewer seconds until the last of them arrived.
  Status AllAtOnce(const std::vector<int>& send_bytes, const std::vector<int>& receive_bytes,
                   double* received, double* seconds);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace mpi
}  // namespace horde

#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "horde/status.h"
#include "mpi_ops/host_buffer.h"

namespace horde {
namespace mpi {

// Ring allreduce in rank order over MPI point-to-point (the algorithm of NCCL's and
// Open MPI's rings): the buffer is cut into one chunk per rank; in n - 1 steps each rank
// sends a chunk to the next rank and reduces the one that arrives from the previous, so
// that each rank ends with one chunk reduced over all; n - 1 more steps pass the reduced
// chunks round. Every link of the ring carries 2(n - 1)/n of the buffer, and in rank
// order a ring crosses each boundary between racks placed in rank order only twice.
//
// Chunks move in segments of kSegmentBytes, all receives of a step posted ahead, and a
// segment goes on to the next rank as soon as it is reduced (or, passing the results
// round, received): the links stay busy while a rank reduces. Every chunk is reduced
// once, in one order, and then copied: every rank ends with the same bits, run after
// run. A call that fails cancels or completes every request it posted before it
// returns, and each call's messages carry a tag of their own (a call number every rank
// counts alike), so a message a failed call left behind never meets a later call.
class RingAllreduce {
 public:
  static constexpr int64_t kSegmentBytes = 256 << 10;

  // The tags of the two users of one communicator's rings: disjoint, so that a message a
  // failed call of one left behind never meets a call of the other.
  enum class Tags { kAllreduce, kReduceScatter };

  // This rank is `rank` of the `size` ranks of `comm`.
  RingAllreduce(MPI_Comm comm, int rank, int size, Tags tags = Tags::kAllreduce)
      : comm_(comm), rank_(rank), size_(size), tags_(tags) {}

  // `count` elements of `type` (`element_size` bytes each) at `data`, combined with `op`
  // over every rank of the communicator, in place.
  Status Run(char* data, int64_t count, int element_size, MPI_Datatype type, MPI_Op op);
  // The first half alone, as a reduce-scatter: `data` holds one block per rank, in rank
  // order, of block_counts[r] elements; afterwards this rank's block holds the blocks
  // combined over every rank (the other blocks hold partial results).
  Status RunReduceScatter(char* data, const std::vector<int64_t>& block_counts, int element_size,
                          MPI_Datatype type, MPI_Op op);
  MPI_Comm comm() const { return comm_; }

 private:
  struct Segment {
    int64_t offset = 0;  // elements from the chunk's start
    int count = 0;
  };
  std::vector<Segment> SegmentsOf(int chunk) const;
  Status ReduceScatter(char* data, MPI_Datatype type, MPI_Op op);
  Status Allgather(char* data, MPI_Datatype type);
  // Posts the receives of `chunk` into `into` (its first element's place), appending them.
  Status PostReceives(int chunk, char* into, MPI_Datatype type);
  Status SendSegment(int chunk, const Segment& segment, char* data, MPI_Datatype type);
  Status FinishSends();
  void Abandon();
  int Next() const { return (rank_ + 1) % size_; }
  int Previous() const { return (rank_ + size_ - 1) % size_; }

  // A new call: its tag, and no requests yet.
  void StartCall(int element_size);
  // Runs `phase`, and cancels or completes every request it left when it fails.
  template <typename Phase>
  Status Guarded(Phase phase);

  MPI_Comm comm_;
  int rank_, size_;
  Tags tags_;
  int64_t calls_ = 0;
  int tag_ = 0;
  int element_size_ = 0;
  std::vector<int64_t> counts_, offsets_;  // each chunk's elements and first element
  std::vector<MPI_Request> receives_, sends_;
  HostBuffer scratch_;  // two chunks: a step's incoming segments, double-buffered
};

}  // namespace mpi
}  // namespace horde

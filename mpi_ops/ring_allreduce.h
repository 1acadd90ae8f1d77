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
// Every chunk is reduced once, in one order, and then copied: every rank ends with the
// same bits, run after run.
class RingAllreduce {
 public:
  // This rank is `rank` of the `size` ranks of `comm`.
  RingAllreduce(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}

  // `count` elements of `type` (`element_size` bytes each) at `data`, combined with `op`
  // over every rank of the communicator, in place.
  Status Run(char* data, int64_t count, int element_size, MPI_Datatype type, MPI_Op op);

 private:
  // Sends chunk `send` to the next rank while chunk `receive` comes from the previous
  // into `into` (its place in `data`, or the scratch buffer).
  Status Pass(char* data, int send, int receive, char* into, MPI_Datatype type);

  MPI_Comm comm_;
  int rank_, size_;
  std::vector<int64_t> counts_, offsets_;  // each chunk's elements and first element
  int element_size_ = 0;
  HostBuffer scratch_;
};

}  // namespace mpi
}  // namespace horde

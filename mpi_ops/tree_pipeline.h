#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/spanning_tree.h"
#include "horde/status.h"
#include "mpi_ops/host_buffer.h"

namespace horde {
namespace mpi {

// Moves one contiguous host buffer over planned spanning trees (core/topology_plan.h)
// with non-blocking point-to-point messages: the buffer is split across the trees by
// their rates, each tree's share in chunks, and each chunk moves on as soon as what it
// needs has arrived, so every tree keeps all of its links busy at once.
//
// Allreduce reduces up each tree and broadcasts down it. A rank combines a chunk in one
// fixed order, its own data then each child's in ascending rank, and the root's result is
// what every rank receives: results are the same on every rank and from run to run
// (float sums differ from MPI_Allreduce's, in the last bits, as any other order would).
class TreePipeline {
 public:
  // Chunks each tree keeps in flight from each child while reducing.
  static constexpr int kWindow = 4;

  // This rank is `rank` of `comm`; the trees span all of comm's ranks, whose messages
  // take `latency_seconds` each (it sizes the chunks: core/collective_cost.h).
  TreePipeline(MPI_Comm comm, int rank, double latency_seconds)
      : comm_(comm), rank_(rank), latency_seconds_(latency_seconds) {}

  // `count` elements of `type` at `data`, combined with `op` over every rank, in place.
  Status Allreduce(const std::vector<SpanningTree>& trees, char* data, int64_t count,
                   int element_size, MPI_Datatype type, MPI_Op op);
  // The root's `count` elements at `data` to every rank (the trees are rooted at it).
  Status Broadcast(const std::vector<SpanningTree>& trees, char* data, int64_t count,
                   int element_size);

 private:
  struct TreeRun;

  Status Run(const std::vector<SpanningTree>& trees, char* data, int64_t count, int element_size,
             bool reduce, MPI_Datatype type, MPI_Op op);
  // Starts what `run` can start and completes what has arrived; *finished once all of
  // its chunks have gone through this rank, *moved set when a chunk moved on.
  Status Advance(TreeRun* run, bool* finished, bool* moved);
  Status PostChildReceives(TreeRun* run, int64_t chunk);
  Status ReduceChunk(TreeRun* run);
  Status SendDown(TreeRun* run, int64_t chunk);

  MPI_Comm comm_;
  int rank_;
  double latency_seconds_;
  HostBuffer scratch_;  // the children's chunks in flight, reused from call to call
};

}  // namespace mpi
}  // namespace horde

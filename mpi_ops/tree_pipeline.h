#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "horde/status.h"
#include "mpi_ops/host_buffer.h"
#include "topology/spanning_tree.h"

namespace horde {
namespace mpi {

// Moves one contiguous host buffer over planned spanning trees (topology/topology_plan.h)
// with non-blocking point-to-point messages: the buffer is split across the trees by
// their rates, each tree's share in chunks, and each chunk moves on as soon as what it
// needs has arrived, so every tree keeps all of its links busy at once.
//
// Allreduce reduces up each tree and broadcasts down it. A rank combines a chunk in one
// fixed order, its own data then each child's in ascending rank, and the root's result is
// what every rank receives: results are the same on every rank and from run to run
// (float sums differ from MPI_Allreduce's, in the last bits, as any other order would).
//
// A call that fails returns only once none of its requests is posted any more: receives
// are cancelled, sends completed (or, past a short wait, cancelled and freed), so neither
// the caller's buffer nor the scratch is written or read by MPI afterwards. Each call's
// messages carry tags of their own (a call number every rank counts alike), so a message
// a failed call left behind never matches a later call's receive.
class TreePipeline {
 public:
  // Chunks each tree keeps in flight from each child while reducing.
  static constexpr int kWindow = 4;
  // Trees one call may use (each tree of a call has tags of its own).
  static constexpr int kMaxTrees = 16;

  // This rank is `rank` of `comm`; the trees span all of comm's ranks, whose messages
  // take `latency_seconds` each (it sizes the chunks: topology/collective_cost.h).
  TreePipeline(MPI_Comm comm, int rank, double latency_seconds);
  ~TreePipeline();

  // `count` elements of `type` at `data`, combined with `op` over every rank, in place.
  Status Allreduce(const std::vector<SpanningTree>& trees, char* data, int64_t count,
                   int element_size, MPI_Datatype type, MPI_Op op);
  // The root's `count` elements at `data` to every rank (the trees are rooted at it).
  Status Broadcast(const std::vector<SpanningTree>& trees, char* data, int64_t count,
                   int element_size);

  // Requests of this pipeline that are still posted: 0 whenever no call is running,
  // whether the last one succeeded or failed.
  int PendingRequests() const;

  // Test seam: the MPI_Test or MPI_Waitall after `calls` more that succeed fails with
  // `code`, as if MPI had returned it, leaving its requests posted (a failure in the
  // middle of a call, on this rank).
  void FailProgressAfter(int64_t calls, int code) {
    fail_after_calls_ = calls;
    fail_code_ = code;
  }

 private:
  struct TreeRun;
  // Per tree: up (allreduce), down (allreduce), down (broadcast).
  static constexpr int kTagsPerCall = 3 * kMaxTrees;

  Status Run(const std::vector<SpanningTree>& trees, char* data, int64_t count, int element_size,
             bool reduce, MPI_Datatype type, MPI_Op op);
  // Lays the call out over the trees into runs_ and posts its first messages.
  Status Start(const std::vector<SpanningTree>& trees, char* data, int64_t count, int element_size,
               bool reduce, MPI_Datatype type, MPI_Op op);
  // Advances every run until all of them are finished, then waits for the last sends.
  Status Pump();
  // Starts what `run` can start and completes what has arrived; *finished once all of
  // its chunks have gone through this rank, *moved set when a chunk moved on.
  Status Advance(TreeRun* run, bool* finished, bool* moved);
  Status PostChildReceives(TreeRun* run, int64_t chunk);
  Status ReduceChunk(TreeRun* run);
  Status SendDown(TreeRun* run, int64_t chunk);
  // MPI_Test and MPI_Waitall, through the test seam.
  Status Test(MPI_Request* request, int* done, const char* call);
  Status Waitall(std::vector<MPI_Request>* requests, const char* call);
  // True when the test seam fails this call.
  bool Fails();
  // After an error: cancels and completes the receives, completes the sends (cancels and
  // frees those still unmatched after a short wait); every request ends MPI_REQUEST_NULL.
  void Abandon();
  // The first tag of tree `tree` of the current call.
  int TreeTag(int tree) const;

  MPI_Comm comm_;
  int rank_;
  double latency_seconds_;
  int tag_base_ = 0;  // tags [tag_base_, tag_base_ + tag_calls_ * kTagsPerCall) are ours
  int64_t tag_calls_ = 1;
  int64_t calls_ = 0;          // calls started on this pipeline, the same count on every rank
  std::vector<TreeRun> runs_;  // the current (or last) call, one run per tree
  HostBuffer scratch_;         // the children's chunks in flight, reused from call to call
  int64_t fail_after_calls_ = -1;
  int fail_code_ = MPI_SUCCESS;
};

}  // namespace mpi
}  // namespace horde

#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/topology.h"
#include "horde/status.h"

namespace horde {
namespace mpi {

// Turns an MPI return code into a Status naming the call that failed.
Status CheckMpi(int code, const char* call);

// The communicators one runtime uses: its own communicator (a private duplicate of the
// job's (mpi_ops/job_communicator.h), or of a process set's ranks, so horde's traffic
// never matches the user's own MPI messages nor another set's), the ranks of it on this
// node, and the ranks with the same local rank across nodes. MPI itself is initialized
// once per process and finalized at exit, so init() after shutdown() works.
class MpiContext {
 public:
  static Status Create(std::shared_ptr<MpiContext>* out);
  // The context of the process set of these (sorted) world ranks, whose rank and size
  // are within the set. Collective over the world; leaves *out null outside the set.
  static Status CreateForRanks(const std::vector<int>& ranks, std::shared_ptr<MpiContext>* out);
  // Revokes every live context's communicators (see rank_failures.h): calls on them fail
  // at once, on every rank, so runtimes stop without waiting for each other. A rank has
  // failed: it also runs every context's failure hooks.
  static void RevokeAll();

  // What stops this context's runtime's device work that may wait on a peer (NCCL), so
  // that the runtime's threads can be joined when a peer is gone. Run, with the reason,
  // only when the runtime is torn down because of a failure, before its threads are
  // joined: by RevokeAll (the job re-forming in place) and at exit after
  // MarkProcessFailed. Never on a normal shutdown, where the work in flight completes.
  using FailureHook = std::function<void(const std::string& reason)>;
  // `owner` identifies the hook for RemoveFailureHook, which its owner must call before
  // whatever the hook uses is gone.
  void AddFailureHook(const void* owner, FailureHook hook);
  void RemoveFailureHook(const void* owner);
  // Runs every live context's failure hooks.
  static void RunFailureHooks(const std::string& reason);
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  MPI_Comm world() const { return world_; }
  // This node's ranks of world(), and the ranks of world() with this rank's local rank.
  MPI_Comm local() const { return local_; }
  MPI_Comm cross() const { return cross_; }
  const Topology& topology() const { return topology_; }
  bool threads_multiple() const { return threads_multiple_; }
  // Whether RevokeAll revoked it: its communicators, and those split from them, are then
  // kept instead of freed (KeepCommunicator).
  bool cut_off() const;

 private:
  MpiContext() = default;
  // A context owning `comm`, this rank's communicator.
  static Status Adopt(MPI_Comm comm, bool threads_multiple, std::shared_ptr<MpiContext>* out);
  // Builds the node-local and cross-node communicators and the topology.
  Status Init();

  MPI_Comm world_ = MPI_COMM_NULL;
  MPI_Comm local_ = MPI_COMM_NULL;
  MPI_Comm cross_ = MPI_COMM_NULL;
  Topology topology_;
  bool threads_multiple_ = false;
  // Guarded by the contexts' lock (mpi_context.cc).
  std::vector<std::pair<const void*, FailureHook>> failure_hooks_;
  bool cut_off_ = false;  // RevokeAll cut its communicators off
};

// Initializes MPI for the process if nobody has (asking for MPI_THREAD_MULTIPLE so user
// code may use MPI too) and reports whether MPI_THREAD_MULTIPLE is available.
Status EnsureMpiInitialized(bool* threads_multiple);

// This process is exiting because it failed: at exit it skips MPI_Finalize (which waits
// for every rank), so mpirun ends the whole job as soon as this process is gone.
void MarkProcessFailed();
// The job has re-formed without ranks it lost (in place): at exit this process skips
// MPI_Finalize as a failed one does.
void MarkJobLostRanks();

// Takes `comm` (leaving MPI_COMM_NULL) without freeing it, for the rest of the process:
// for a communicator whose operations a rank failure cut short. Freed, its context id
// would go to the next communicator made, and Open MPI's point-to-point layer (ob1)
// matches a message by that id: a message of the old communicator that arrives after
// the free (a survivor sent it before the failure cut the operation short) is held for
// the id and then matched as the new communicator's own. After an in-place recovery
// that made a process set's or the job's collective read another one's message
// (MPI_ERR_TRUNCATE in a set's negotiation) or wait forever for one already taken,
// and so the runtimes' shutdown at exit never ended. Kept, the id stays taken and late
// messages land in the dead communicator's own queues. A few communicators per
// recovery; MPI_Finalize releases them.
void KeepCommunicator(MPI_Comm* comm);

}  // namespace mpi
}  // namespace horde

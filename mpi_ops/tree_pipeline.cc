#include "mpi_ops/tree_pipeline.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/logging.h"
#include "mpi_ops/abandoned_requests.h"
#include "mpi_ops/idle_backoff.h"
#include "mpi_ops/mpi_context.h"
#include "topology/collective_cost.h"

namespace horde {
namespace mpi {
namespace {

// The tags of the calls: above every other op's (core messages are collectives, Adasum
// 0xADA5) where the MPI allows tags that large (Open MPI and MPICH do), else between
// the two, which gives fewer calls before a call's tags come round again.
constexpr int kWideTagBase = 0x10000;
constexpr int kNarrowTagBase = 0x7E20;
constexpr int kNarrowTagEnd = 0xADA5;
int MpiTagUpperBound() {
  void* value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
  return found ? *static_cast<int*>(value) : 32767;  // the least the standard allows
}

}  // namespace

// One tree's share of the buffer, as this rank sees it.
struct TreePipeline::TreeRun {
  int tree = 0;
  int parent = -1;  // -1 at the root
  std::vector<int> children;
  char* data = nullptr;
  int64_t count = 0;  // elements of the share
  int64_t chunk = 0;  // elements per chunk
  int64_t chunks = 0;
  int element_size = 0;
  bool reduce = false;
  int tag = 0;  // the tree's first tag in this call
  MPI_Datatype type = MPI_BYTE;
  MPI_Op op = MPI_OP_NULL;
  char* slots = nullptr;                    // kWindow chunks per child, for the reduction
  int64_t reduced = 0;                      // chunks combined with every child's
  int64_t down_posted = 0;                  // chunks whose receive from the parent is posted
  int64_t down_done = 0;                    // chunks final on this rank and passed to the children
  std::vector<MPI_Request> child_receives;  // [slot * children + child]
  std::vector<MPI_Request> up_sends;        // per chunk
  std::vector<MPI_Request> down_receives;   // per chunk
  std::vector<MPI_Request> down_sends;      // per chunk and child

  char* Chunk(int64_t c) const { return data + c * chunk * element_size; }
  int ChunkCount(int64_t c) const { return static_cast<int>(std::min(chunk, count - c * chunk)); }
  char* Slot(int64_t c, size_t child) const {
    return slots + ((c % kWindow) * children.size() + child) * chunk * element_size;
  }
  int up_tag() const { return tag; }
  int down_tag() const { return tag + (reduce ? 1 : 2); }
};

TreePipeline::TreePipeline(MPI_Comm comm, int rank, double latency_seconds)
    : comm_(comm), rank_(rank), latency_seconds_(latency_seconds) {
  const int64_t upper = MpiTagUpperBound();
  const bool wide = upper >= int64_t{kWideTagBase} + 16 * kTagsPerCall;
  tag_base_ = wide ? kWideTagBase : kNarrowTagBase;
  tag_calls_ = ((wide ? upper + 1 : kNarrowTagEnd) - tag_base_) / kTagsPerCall;
}

TreePipeline::~TreePipeline() = default;

int TreePipeline::TreeTag(int tree) const {
  return tag_base_ + static_cast<int>((calls_ % tag_calls_) * kTagsPerCall) + 3 * tree;
}

Status TreePipeline::Allreduce(const std::vector<SpanningTree>& trees, char* data, int64_t count,
                               int element_size, MPI_Datatype type, MPI_Op op) {
  return Run(trees, data, count, element_size, /*reduce=*/true, type, op);
}

Status TreePipeline::Broadcast(const std::vector<SpanningTree>& trees, char* data, int64_t count,
                               int element_size) {
  return Run(trees, data, count, element_size, /*reduce=*/false, MPI_BYTE, MPI_OP_NULL);
}

Status TreePipeline::Run(const std::vector<SpanningTree>& trees, char* data, int64_t count,
                         int element_size, bool reduce, MPI_Datatype type, MPI_Op op) {
  Status status = Start(trees, data, count, element_size, reduce, type, op);
  ++calls_;  // every rank counts every call, failed or not, so the tags stay in step
  if (status.ok()) status = Pump();
  if (!status.ok()) Abandon();
  return status;
}

Status TreePipeline::Start(const std::vector<SpanningTree>& trees, char* data, int64_t count,
                           int element_size, bool reduce, MPI_Datatype type, MPI_Op op) {
  runs_.assign(trees.size(), TreeRun{});
  if (trees.size() > static_cast<size_t>(kMaxTrees)) {
    return Status::InvalidArgument("tree collective: " + std::to_string(trees.size()) +
                                   " trees; the executor takes at most " +
                                   std::to_string(kMaxTrees));
  }
  const std::vector<int64_t> shares = SplitByRate(trees, count);
  int64_t slot_bytes = 0;
  int64_t begin = 0;
  for (size_t t = 0; t < trees.size(); ++t) {
    TreeRun& run = runs_[t];
    run.tree = static_cast<int>(t);
    run.parent = trees[t].parent[rank_];
    run.children = trees[t].Children(rank_);
    run.data = data + begin * element_size;
    run.count = shares[t];
    run.chunk = ChunkElements(std::max<int64_t>(shares[t], 1), element_size, trees[t],
                              latency_seconds_);
    run.chunks = (shares[t] + run.chunk - 1) / run.chunk;
    run.element_size = element_size;
    run.reduce = reduce;
    run.tag = TreeTag(run.tree);
    run.type = type;
    run.op = op;
    begin += shares[t];
    if (reduce) slot_bytes += kWindow * run.children.size() * run.chunk * element_size;
  }
  char* slots = nullptr;
  HORDE_RETURN_IF_ERROR(scratch_.Reserve(std::max<int64_t>(slot_bytes, 1), &slots));
  for (TreeRun& run : runs_) {
    run.slots = slots;
    if (reduce) slots += kWindow * run.children.size() * run.chunk * element_size;
    run.child_receives.assign(kWindow * run.children.size(), MPI_REQUEST_NULL);
    run.up_sends.assign(run.chunks, MPI_REQUEST_NULL);
    run.down_receives.assign(run.chunks, MPI_REQUEST_NULL);
    if (reduce) {
      for (int64_t c = 0; c < std::min<int64_t>(kWindow, run.chunks); ++c) {
        HORDE_RETURN_IF_ERROR(PostChildReceives(&run, c));
      }
    } else if (run.parent < 0) {
      for (; run.down_done < run.chunks; ++run.down_done) {
        HORDE_RETURN_IF_ERROR(SendDown(&run, run.down_done));
      }
    }
  }
  return Status::Ok();
}

Status TreePipeline::Pump() {
  IdleBackoff idle;
  for (size_t unfinished = runs_.size(); unfinished > 0;) {
    unfinished = 0;
    bool moved = false;
    for (TreeRun& run : runs_) {
      bool finished = false;
      HORDE_RETURN_IF_ERROR(Advance(&run, &finished, &moved));
      unfinished += finished ? 0 : 1;
    }
    if (unfinished > 0) idle.Pass(moved);
  }
  for (TreeRun& run : runs_) {
    HORDE_RETURN_IF_ERROR(Waitall(&run.up_sends, "MPI_Waitall (tree allreduce)"));
    HORDE_RETURN_IF_ERROR(Waitall(&run.down_sends, "MPI_Waitall (tree)"));
  }
  return Status::Ok();
}

void TreePipeline::Abandon() {
  std::vector<MPI_Request*> sends;
  for (TreeRun& run : runs_) {
    for (MPI_Request& request : run.child_receives) CancelReceive(&request);
    for (MPI_Request& request : run.down_receives) CancelReceive(&request);
    for (MPI_Request& request : run.up_sends) sends.push_back(&request);
    for (MPI_Request& request : run.down_sends) sends.push_back(&request);
  }
  const int left = DrainSends(sends);
  if (left > 0) {
    HORDE_LOG(kWarning) << "tree collective failed on rank " << rank_ << ": " << left
                        << " of its sends were not taken within "
                        << std::chrono::seconds(kSendDrain).count()
                        << " s and were cancelled; their tags are not reused by later calls";
  }
}

int TreePipeline::PendingRequests() const {
  int pending = 0;
  for (const TreeRun& run : runs_) {
    for (const auto* list :
         {&run.child_receives, &run.up_sends, &run.down_receives, &run.down_sends}) {
      pending += static_cast<int>(std::count_if(
          list->begin(), list->end(), [](MPI_Request r) { return r != MPI_REQUEST_NULL; }));
    }
  }
  return pending;
}

bool TreePipeline::Fails() {
  if (fail_after_calls_ < 0) return false;
  return fail_after_calls_-- == 0;
}

Status TreePipeline::Test(MPI_Request* request, int* done, const char* call) {
  if (Fails()) return CheckMpi(fail_code_, call);
  return CheckMpi(MPI_Test(request, done, MPI_STATUS_IGNORE), call);
}

Status TreePipeline::Waitall(std::vector<MPI_Request>* requests, const char* call) {
  if (Fails()) return CheckMpi(fail_code_, call);
  return CheckMpi(
      MPI_Waitall(static_cast<int>(requests->size()), requests->data(), MPI_STATUSES_IGNORE), call);
}

Status TreePipeline::PostChildReceives(TreeRun* run, int64_t chunk) {
  for (size_t i = 0; i < run->children.size(); ++i) {
    MPI_Request* request = &run->child_receives[(chunk % kWindow) * run->children.size() + i];
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Irecv(run->Slot(chunk, i), run->ChunkCount(chunk), run->type,
                                             run->children[i], run->up_tag(), comm_, request),
                                   "MPI_Irecv (tree allreduce)"));
  }
  return Status::Ok();
}

Status TreePipeline::ReduceChunk(TreeRun* run) {
  const int64_t c = run->reduced;
  // MPI_Reduce_local(in, inout) computes in op inout: each child's chunk in turn onto ours.
  for (size_t i = 0; i < run->children.size(); ++i) {
    HORDE_RETURN_IF_ERROR(CheckMpi(
        MPI_Reduce_local(run->Slot(c, i), run->Chunk(c), run->ChunkCount(c), run->type, run->op),
        "MPI_Reduce_local (tree allreduce)"));
  }
  ++run->reduced;
  if (run->reduced + kWindow - 1 < run->chunks) {
    HORDE_RETURN_IF_ERROR(PostChildReceives(run, run->reduced + kWindow - 1));
  }
  if (run->parent >= 0) {
    return CheckMpi(MPI_Isend(run->Chunk(c), run->ChunkCount(c), run->type, run->parent,
                              run->up_tag(), comm_, &run->up_sends[c]),
                    "MPI_Isend (tree allreduce)");
  }
  // The root's combined chunk is final: down it goes.
  ++run->down_done;
  return SendDown(run, c);
}

Status TreePipeline::SendDown(TreeRun* run, int64_t chunk) {
  const int bytes = run->ChunkCount(chunk) * run->element_size;
  for (int child : run->children) {
    run->down_sends.emplace_back(MPI_REQUEST_NULL);
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Isend(run->Chunk(chunk), bytes, MPI_BYTE, child,
                                             run->down_tag(), comm_, &run->down_sends.back()),
                                   "MPI_Isend (tree)"));
  }
  return Status::Ok();
}

Status TreePipeline::Advance(TreeRun* run, bool* finished, bool* moved) {
  while (run->reduce && run->reduced < run->chunks) {
    bool arrived = true;
    for (size_t i = 0; i < run->children.size(); ++i) {
      int done = 0;
      MPI_Request* request =
          &run->child_receives[(run->reduced % kWindow) * run->children.size() + i];
      HORDE_RETURN_IF_ERROR(Test(request, &done, "MPI_Test (tree allreduce)"));
      arrived = arrived && done;
    }
    if (!arrived) break;
    HORDE_RETURN_IF_ERROR(ReduceChunk(run));
    *moved = true;
  }
  if (run->parent >= 0) {
    // A chunk's reduced data goes up from the same memory the final chunk arrives in, so
    // its receive is posted once its send up has completed.
    const int64_t ready = run->reduce ? run->reduced : run->chunks;
    while (run->down_posted < ready) {
      int done = 1;
      HORDE_RETURN_IF_ERROR(Test(&run->up_sends[run->down_posted], &done, "MPI_Test (tree)"));
      if (!done) break;
      const int64_t c = run->down_posted++;
      *moved = true;
      HORDE_RETURN_IF_ERROR(
          CheckMpi(MPI_Irecv(run->Chunk(c), run->ChunkCount(c) * run->element_size, MPI_BYTE,
                             run->parent, run->down_tag(), comm_, &run->down_receives[c]),
                   "MPI_Irecv (tree)"));
    }
    while (run->down_done < run->down_posted) {
      int done = 0;
      HORDE_RETURN_IF_ERROR(Test(&run->down_receives[run->down_done], &done, "MPI_Test (tree)"));
      if (!done) break;
      HORDE_RETURN_IF_ERROR(SendDown(run, run->down_done++));
      *moved = true;
    }
  }
  *finished = run->down_done == run->chunks;
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde

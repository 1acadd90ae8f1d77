#include "mpi_ops/mpi_context.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "core/api.h"
#include "core/logging.h"
#include "mpi_ops/job_communicator.h"
#include "mpi_ops/rank_failures.h"
#include "mpi_ops/world_ranks.h"

namespace horde {
namespace mpi {
namespace {

std::atomic<bool> g_process_failed{false};
std::atomic<bool> g_job_lost_ranks{false};  // MarkJobLostRanks

// The live contexts, for RevokeAll.
std::mutex g_contexts_mu;
std::set<MpiContext*> g_contexts;

// The communicators that a rank failure cut off (KeepCommunicator), never freed.
std::mutex g_kept_mu;
std::vector<MPI_Comm>* g_kept = new std::vector<MPI_Comm>();

// Runs at process exit when horde initialized MPI: the runtime must stop making MPI
// calls before MPI goes away. A failed process skips MPI_Finalize, which would wait for
// every other rank to finalize too; exiting without it makes mpirun end the job now.
// It also stops its device work first, which could wait on a dead peer forever.
//
// A survivor of a job that lost ranks in place (ShrinkJob) skips it too: Open MPI 5.0.7's
// MPI_Finalize can wait for good once every rank of another host is gone, and the job's
// processes are the survivors', which have all finished when they get here.
void FinalizeAtExit() {
  if (g_process_failed.load()) MpiContext::RunFailureHooks("this process failed");
  ShutdownRuntime();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !g_process_failed.load() && !g_job_lost_ranks.load()) MPI_Finalize();
}

}  // namespace

void MarkProcessFailed() { g_process_failed = true; }

void MarkJobLostRanks() { g_job_lost_ranks = true; }

void KeepCommunicator(MPI_Comm* comm) {
  if (*comm == MPI_COMM_NULL) return;
  std::lock_guard<std::mutex> lock(g_kept_mu);
  g_kept->push_back(*comm);
  *comm = MPI_COMM_NULL;
}

Status CheckMpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::Internal(std::string(call) + " failed: " + std::string(text, length));
}

// Open MPI initialized by the application (say, by mpi4py) without the setting horde
// makes when it initializes MPI itself (see EnsureMpiInitialized): said once, by rank 0.
void WarnIfOpenMpiSpins() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (world_rank != 0 || std::string(version, length).find("Open MPI") == std::string::npos ||
      std::getenv("OMPI_MCA_mpi_yield_when_idle") != nullptr) {
    return;
  }
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  HORDE_LOG(kWarning)
      << "MPI was initialized before horde without OMPI_MCA_mpi_yield_when_idle=1: Open MPI's "
         "blocking calls will spin at full speed while training computes on the same cores; "
         "set it in the job's environment (horde sets it when it initializes MPI itself)";
}

Status EnsureMpiInitialized(bool* threads_multiple) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    return Status::PreconditionError(
        "MPI has already been finalized in this process; horde "
        "cannot start after MPI_Finalize()");
  }
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    // Open MPI's blocking calls spin at full speed unless told to yield; horde's
    // background thread waits in them while training computes on the same cores
    // (measured: resnet18 on 2 ranks, 2 cores, 40% -> 12% communication overhead).
    // The user's own setting wins.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    HORDE_RETURN_IF_ERROR(CheckMpi(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread"));
    std::atexit(FinalizeAtExit);
  } else {
    MPI_Query_thread(&provided);
    WarnIfOpenMpiSpins();
  }
  // horde's own calls come from one thread at a time (init here, the rest from the
  // background thread), which SERIALIZED allows.
  if (provided < MPI_THREAD_SERIALIZED) {
    return Status::PreconditionError(
        "MPI was initialized with a thread level below MPI_THREAD_SERIALIZED; horde makes "
        "its MPI calls from a background thread and needs at least that");
  }
  *threads_multiple = provided == MPI_THREAD_MULTIPLE;
  return Status::Ok();
}

Status MpiContext::Create(std::shared_ptr<MpiContext>* out) {
  bool threads_multiple = false;
  HORDE_RETURN_IF_ERROR(EnsureMpiInitialized(&threads_multiple));
  MPI_Comm comm = MPI_COMM_NULL;
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Comm_dup(JobCommunicator(), &comm), "MPI_Comm_dup"));
  return Adopt(comm, threads_multiple, out);
}

Status MpiContext::CreateForRanks(const std::vector<int>& ranks, std::shared_ptr<MpiContext>* out) {
  bool threads_multiple = false;
  HORDE_RETURN_IF_ERROR(EnsureMpiInitialized(&threads_multiple));
  // Each set's background thread calls MPI beside the global set's.
  if (!threads_multiple) {
    return Status::PreconditionError(
        "process sets need MPI_THREAD_MULTIPLE (each set's runtime calls MPI from its own "
        "thread), and this MPI library provides less");
  }
  MPI_Comm job = JobCommunicator();
  int world_rank = 0;
  MPI_Comm_rank(job, &world_rank);
  const bool member = std::binary_search(ranks.begin(), ranks.end(), world_rank);
  // The split makes a new communicator (MPI_COMM_NULL outside the set) with its own
  // matching context, so its traffic never meets another set's, as the world's
  // duplicate in Create. It is made on the job's communicator, like that duplicate,
  // because no horde thread uses that communicator.
  MPI_Comm comm = MPI_COMM_NULL;
  HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Comm_split(job, member ? 0 : MPI_UNDEFINED, world_rank, &comm),
                                 "MPI_Comm_split"));
  out->reset();
  if (!member) return Status::Ok();
  HORDE_RETURN_IF_ERROR(Adopt(comm, threads_multiple, out));
  // Named by their MPI_COMM_WORLD ranks, even when `ranks` counts in a re-formed job.
  (*out)->topology_.world_ranks = WorldRanksOf(comm);
  (*out)->topology_.process_set = true;
  return Status::Ok();
}

Status MpiContext::Adopt(MPI_Comm comm, bool threads_multiple, std::shared_ptr<MpiContext>* out) {
  std::shared_ptr<MpiContext> context(new MpiContext());
  context->world_ = comm;
  context->threads_multiple_ = threads_multiple;
  HORDE_RETURN_IF_ERROR(context->Init());
  {
    std::lock_guard<std::mutex> lock(g_contexts_mu);
    g_contexts.insert(context.get());
  }
  *out = std::move(context);
  return Status::Ok();
}

Status MpiContext::Init() {
  SetErrorHandler(world_);
  MPI_Comm_rank(world_, &topology_.rank);
  MPI_Comm_size(world_, &topology_.size);
  // A re-formed job numbers its ranks otherwise than the launcher, which knows them by
  // their MPI_COMM_WORLD ranks: messages name them so (core/rank_names.h).
  topology_.world_ranks = WorldRanksOf(world_);
  if (NumberedAsWorld(topology_.world_ranks)) topology_.world_ranks.clear();

  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, topology_.rank, MPI_INFO_NULL, &local_),
      "MPI_Comm_split_type"));
  MPI_Comm_rank(local_, &topology_.local_rank);
  MPI_Comm_size(local_, &topology_.local_size);

  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Comm_split(world_, topology_.local_rank, topology_.rank, &cross_), "MPI_Comm_split"));
  MPI_Comm_rank(cross_, &topology_.cross_rank);
  MPI_Comm_size(cross_, &topology_.cross_size);

  int local_sizes[2] = {topology_.local_size, -topology_.local_size};
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Allreduce(MPI_IN_PLACE, local_sizes, 2, MPI_INT, MPI_MAX, world_), "MPI_Allreduce"));
  topology_.homogeneous = local_sizes[0] == -local_sizes[1];
  return Status::Ok();
}

void MpiContext::RevokeAll() {
  {
    std::lock_guard<std::mutex> lock(g_contexts_mu);
    for (MpiContext* context : g_contexts) {
      RevokeCommunicator(context->world_);
      context->cut_off_ = true;
    }
  }
  RunFailureHooks("a rank failed and the job is re-forming from its live ranks");
}

bool MpiContext::cut_off() const {
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  return cut_off_;
}

void MpiContext::RunFailureHooks(const std::string& reason) {
  // Under the lock, so that no hook's owner goes away meanwhile (RemoveFailureHook).
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  for (MpiContext* context : g_contexts) {
    for (const auto& [owner, hook] : context->failure_hooks_) hook(reason);
  }
}

void MpiContext::AddFailureHook(const void* owner, FailureHook hook) {
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  failure_hooks_.emplace_back(owner, std::move(hook));
}

void MpiContext::RemoveFailureHook(const void* owner) {
  std::lock_guard<std::mutex> lock(g_contexts_mu);
  failure_hooks_.erase(std::remove_if(failure_hooks_.begin(), failure_hooks_.end(),
                                      [owner](const auto& h) { return h.first == owner; }),
                       failure_hooks_.end());
}

MpiContext::~MpiContext() {
  bool cut_off = false;
  {
    std::lock_guard<std::mutex> lock(g_contexts_mu);
    g_contexts.erase(this);
    cut_off = cut_off_;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Comm* comm : {&cross_, &local_, &world_}) {
    if (cut_off) {
      KeepCommunicator(comm);  // its operations were cut short: see KeepCommunicator
    } else if (*comm != MPI_COMM_NULL) {
      MPI_Comm_free(comm);
    }
  }
}

}  // namespace mpi
}  // namespace horde

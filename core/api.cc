#include "core/api.h"

#include <mutex>

#include "core/logging.h"
#include "core/process_set_registry.h"

namespace horde {
namespace {

// `registry_mu` guards the registry and is held only briefly, so collectives can look
// sets up while another thread waits inside a collective set change; `change_mu`
// serializes init, shutdown and set changes, which call every rank together.
struct Sets {
  std::mutex change_mu;
  std::mutex registry_mu;
  ProcessSetRegistry registry;
  // What a re-forming of the job that failed leaves for the next one (guarded by
  // change_mu): the registry is empty then, so the sets to start again, by id, with their
  // ranks before the first attempt, and for each rank of the current job its rank then.
  struct Reform {
    bool pending = false;
    std::map<int32_t, std::vector<int>> sets;
    std::vector<int> original;
  } reform;
};

Sets& TheSets() {
  static Sets* sets = new Sets();  // never destroyed: used at exit by FinalizeAtExit
  return *sets;
}

void ShutdownEntries(std::vector<ProcessSetRegistry::Entry> entries) {
  // Clear() lists the global set first; it goes last, after the sets that use its ranks.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    if (it->runtime) it->runtime->Shutdown();
  }
}

std::vector<ProcessSetRegistry::Entry> TakeAll(Sets& sets) {
  std::lock_guard<std::mutex> lock(sets.registry_mu);
  return sets.registry.Clear();
}

Status StartGlobal(const RuntimeFactory& factory, std::shared_ptr<Runtime>* out) {
  Config config;
  const Status parsed = Config::FromEnv(ProcessEnv(), &config);
  SetLogLevel(config.log_level);
  std::unique_ptr<Runtime> runtime;
  HORDE_RETURN_IF_ERROR(factory(parsed, config, &runtime));
  SetLogRank(runtime->topology().rank);
  Status log_opened = runtime->OpenAutotuneLog();
  if (!log_opened.ok()) {
    runtime->Shutdown();
    return Status::InvalidArgument("HORDE_AUTOTUNE_LOG: " + log_opened.message());
  }
  if (!config.timeline_path.empty() && config.timeline_path != "DYNAMIC") {
    Status started = runtime->StartTimeline(config.timeline_path, config.timeline_mark_cycles);
    if (!started.ok()) {
      runtime->Shutdown();
      return Status::InvalidArgument("HORDE_TIMELINE: " + started.message());
    }
  }
  *out = std::move(runtime);
  return Status::Ok();
}

// Builds the runtime of one set of these ranks, with the global set's config.
Status BuildSet(const Config& global_config, const std::vector<int>& ranks,
                const ProcessSetFactory& set_factory, std::unique_ptr<Runtime>* runtime) {
  Config config = global_config;
  // Only the global set records a timeline and autotunes: one file, one tuner per rank.
  config.autotune = false;
  return set_factory(config, ranks, runtime);
}

// Validates, builds and registers one set; the caller holds change_mu and has checked
// that sets may be added now.
Status AddLocked(Sets& sets, std::vector<int> ranks, const ProcessSetFactory& set_factory,
                 int32_t* id) {
  Config config;
  {
    std::lock_guard<std::mutex> lock(sets.registry_mu);
    const ProcessSetRegistry::Entry* global = nullptr;
    HORDE_RETURN_IF_ERROR(sets.registry.Find(0, &global));
    config = global->runtime->config();
    HORDE_RETURN_IF_ERROR(ValidateProcessSetRanks(global->runtime->topology().size, &ranks));
    const int32_t existing = sets.registry.IdOf(ranks);
    if (existing >= 0) {
      return Status::InvalidArgument("process set " + RanksString(ranks) + " already exists (id " +
                                     std::to_string(existing) + ")");
    }
  }
  std::unique_ptr<Runtime> runtime;
  HORDE_RETURN_IF_ERROR(BuildSet(config, ranks, set_factory, &runtime));
  std::lock_guard<std::mutex> lock(sets.registry_mu);
  *id = sets.registry.Add(std::move(ranks), std::move(runtime));
  return Status::Ok();
}

// Starts the global runtime and the sets of `old_sets` (ranks of the job before it was
// re-formed) over the job `previous_ranks` describes; the caller holds change_mu.
Status StartReformed(Sets& sets, const RuntimeFactory& factory,
                     const ProcessSetFactory& set_factory,
                     const std::map<int32_t, std::vector<int>>& old_sets,
                     const std::vector<int>& previous_ranks) {
  std::shared_ptr<Runtime> global;
  HORDE_RETURN_IF_ERROR(StartGlobal(factory, &global));
  {
    std::lock_guard<std::mutex> lock(sets.registry_mu);
    sets.registry.SetGlobal(global->topology().size, global);
  }
  for (const auto& [id, old_ranks] : old_sets) {
    std::vector<int> ranks = RenumberedRanks(old_ranks, previous_ranks);
    if (ranks.empty()) continue;
    std::unique_ptr<Runtime> runtime;
    HORDE_RETURN_IF_ERROR(BuildSet(global->config(), ranks, set_factory, &runtime));
    std::lock_guard<std::mutex> lock(sets.registry_mu);
    sets.registry.Put(id, std::move(ranks), std::move(runtime));
  }
  return Status::Ok();
}

bool RunningLocked(Sets& sets) {
  std::lock_guard<std::mutex> lock(sets.registry_mu);
  const ProcessSetRegistry::Entry* global = nullptr;
  return sets.registry.Find(0, &global).ok() && !global->runtime->stopped();
}

Status NotInitialized() {
  return Status::InvalidArgument(
      "horde has not been initialized; call init() first (hvd.init() in Python)");
}

}  // namespace

Status InitRuntime(const RuntimeFactory& factory, const std::vector<std::vector<int>>& process_sets,
                   const ProcessSetFactory& set_factory, std::vector<int32_t>* ids) {
  Sets& sets = TheSets();
  std::lock_guard<std::mutex> change(sets.change_mu);
  if (RunningLocked(sets)) {
    if (process_sets.empty()) {
      // Every rank calls init() at the same point of its program (a test suite calls it
      // at the start of every test), so unnamed operations are numbered anew from here.
      std::lock_guard<std::mutex> lock(sets.registry_mu);
      for (const auto& runtime : sets.registry.runtimes()) runtime->StartNumberingEpoch();
      return Status::Ok();
    }
    return Status::InvalidArgument(
        "horde is already initialized: init(process_sets=...) cannot add sets now; call "
        "shutdown() first, or add them with add_process_set()");
  }
  // A runtime whose loop ended because another rank shut down is replaced, so every
  // rank can init() again together.
  ShutdownEntries(TakeAll(sets));
  sets.reform = Sets::Reform();
  std::shared_ptr<Runtime> global;
  HORDE_RETURN_IF_ERROR(StartGlobal(factory, &global));
  {
    std::lock_guard<std::mutex> lock(sets.registry_mu);
    sets.registry.SetGlobal(global->topology().size, global);
  }
  for (const auto& ranks : process_sets) {
    int32_t id = -1;
    Status added = AddLocked(sets, ranks, set_factory, &id);
    if (!added.ok()) {
      ShutdownEntries(TakeAll(sets));
      return Status::InvalidArgument("init(process_sets=...): " + added.message());
    }
    if (ids) ids->push_back(id);
  }
  return Status::Ok();
}

Status RebuildRuntimes(const JobReform& reform, const RuntimeFactory& factory,
                       const ProcessSetFactory& set_factory,
                       std::map<int32_t, std::vector<int>>* sets_out) {
  Sets& sets = TheSets();
  std::lock_guard<std::mutex> change(sets.change_mu);
  // The sets to start again, with their ranks before the first re-forming, and the rank
  // then of each rank of the current job (empty: the same ranks). After a failed call,
  // the next one starts from what that one started from: the sets are not lost.
  Sets::Reform& pending = sets.reform;
  if (!pending.pending) {
    std::lock_guard<std::mutex> lock(sets.registry_mu);
    pending.sets = sets.registry.SetRanks();
    pending.original.clear();
    pending.pending = true;
  }
  // Each failed attempt either lost a rank or failed alike on every rank (a setting);
  // a few attempts cover ranks dying one after another.
  constexpr int kAttempts = 4;
  Status started;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    reform.interrupt();
    ShutdownEntries(TakeAll(sets));
    std::vector<int> previous;
    started = reform.shrink(&previous);
    if (!started.ok()) break;  // the job is as it was: the next call shrinks it again
    if (!pending.original.empty()) {
      for (int& rank : previous) rank = pending.original[rank];
    }
    pending.original = previous;
    started = StartReformed(sets, factory, set_factory, pending.sets, pending.original);
    if (reform.agree(started.ok())) break;
    if (started.ok()) started = Status::Internal("a rank failed while the job re-formed");
    HORDE_LOG(kWarning) << "re-forming the job from its live ranks, attempt " << attempt + 1
                        << " of " << kAttempts << ": " << started.message();
  }
  if (!started.ok()) {
    ShutdownEntries(TakeAll(sets));
    return Status::Internal(started.message() +
                            "; horde stays stopped on this rank until a later re-forming "
                            "succeeds (the process sets are kept for it)");
  }
  pending = Sets::Reform();
  std::lock_guard<std::mutex> lock(sets.registry_mu);
  *sets_out = sets.registry.SetRanks();
  return Status::Ok();
}

void ShutdownRuntime() {
  Sets& sets = TheSets();
  std::lock_guard<std::mutex> change(sets.change_mu);
  ShutdownEntries(TakeAll(sets));
  sets.reform = Sets::Reform();
}

void AbortRuntimes(const std::string& failure) {
  Sets& sets = TheSets();
  std::vector<std::shared_ptr<Runtime>> runtimes;
  {
    std::lock_guard<std::mutex> lock(sets.registry_mu);
    runtimes = sets.registry.runtimes();
  }
  for (auto& runtime : runtimes) runtime->Abort(failure);
}

std::shared_ptr<Runtime> CurrentRuntime() {
  Sets& sets = TheSets();
  std::lock_guard<std::mutex> lock(sets.registry_mu);
  const ProcessSetRegistry::Entry* global = nullptr;
  return sets.registry.Find(0, &global).ok() ? global->runtime : nullptr;
}

std::shared_ptr<Timeline> CurrentTimeline() {
  std::shared_ptr<Runtime> runtime = CurrentRuntime();
  return runtime ? runtime->timeline() : nullptr;
}

Status AddProcessSet(std::vector<int> ranks, const ProcessSetFactory& set_factory, int32_t* id) {
  Sets& sets = TheSets();
  std::lock_guard<std::mutex> change(sets.change_mu);
  if (!RunningLocked(sets)) return NotInitialized();
  if (!CurrentRuntime()->config().dynamic_process_sets) {
    return Status::InvalidArgument(
        "add_process_set after init() needs HORDE_DYNAMIC_PROCESS_SETS=1 (or "
        "HOROVOD_DYNAMIC_PROCESS_SETS=1) on every rank; or pass the set to init(process_sets=...)");
  }
  return AddLocked(sets, std::move(ranks), set_factory, id);
}

Status RemoveProcessSet(int32_t id) {
  Sets& sets = TheSets();
  std::lock_guard<std::mutex> change(sets.change_mu);
  if (!RunningLocked(sets)) return NotInitialized();
  if (!CurrentRuntime()->config().dynamic_process_sets) {
    return Status::InvalidArgument(
        "remove_process_set needs HORDE_DYNAMIC_PROCESS_SETS=1 (or "
        "HOROVOD_DYNAMIC_PROCESS_SETS=1) on every rank");
  }
  ProcessSetRegistry::Entry removed;
  {
    std::lock_guard<std::mutex> lock(sets.registry_mu);
    HORDE_RETURN_IF_ERROR(sets.registry.Remove(id, &removed));
  }
  if (removed.runtime) removed.runtime->Shutdown();
  return Status::Ok();
}

Status FindProcessSet(int32_t id, std::shared_ptr<Runtime>* runtime, std::vector<int>* ranks) {
  Sets& sets = TheSets();
  std::lock_guard<std::mutex> lock(sets.registry_mu);
  const ProcessSetRegistry::Entry* global = nullptr;
  if (!sets.registry.Find(0, &global).ok()) return NotInitialized();
  const ProcessSetRegistry::Entry* entry = nullptr;
  HORDE_RETURN_IF_ERROR(sets.registry.Find(id, &entry));
  if (!entry->runtime) {
    return Status::InvalidArgument("rank " + std::to_string(global->runtime->topology().rank) +
                                   " is not in process set " + std::to_string(id) + " (ranks " +
                                   RanksString(entry->ranks) +
                                   "); only its members may call its collectives");
  }
  *runtime = entry->runtime;
  if (ranks != nullptr) *ranks = entry->ranks;
  return Status::Ok();
}

}  // namespace horde

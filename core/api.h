#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/runtime.h"

namespace horde {

// The process's runtimes, one per process set (core/process_set_registry.h), held here
// at the API boundary and nowhere else. Id 0 is the global set, over every rank.
// `parsed` is how this rank's environment parsed into the config: a factory agrees on
// the settings with the other ranks first (core/shared_config.h), so that a malformed
// value on one rank fails init() on all.
using RuntimeFactory =
    std::function<Status(const Status& parsed, const Config&, std::unique_ptr<Runtime>*)>;
// Builds the runtime of the process set of these (sorted) ranks. Collective over every
// rank of the job; leaves *runtime null on the ranks outside the set.
using ProcessSetFactory =
    std::function<Status(const Config&, const std::vector<int>& ranks, std::unique_ptr<Runtime>*)>;

// Reads the config from the environment and builds the global runtime with `factory`,
// then one runtime per set of `process_sets` with `set_factory`, whose ids (in order)
// go to `ids`. A second call while running does nothing (and refuses process sets);
// after a shutdown (of this rank or any other) it starts anew.
Status InitRuntime(const RuntimeFactory& factory,
                   const std::vector<std::vector<int>>& process_sets = {},
                   const ProcessSetFactory& set_factory = nullptr,
                   std::vector<int32_t>* ids = nullptr);
// Shuts every set's runtime down, the global one last.
void ShutdownRuntime();
// Every runtime of this rank fails its pending and later operations with `failure`.
void AbortRuntimes(const std::string& failure);
// The global runtime, or nullptr before init() and after shutdown().
std::shared_ptr<Runtime> CurrentRuntime();
// The global runtime's timeline, or nullptr when horde is not running.
std::shared_ptr<Timeline> CurrentTimeline();

// How the job re-forms from its live ranks after a rank failed (over MPI:
// mpi_ops/job_communicator.h). Every survivor makes the same calls.
struct JobReform {
  // Makes every communication of this rank's runtimes fail at once, on every rank.
  std::function<void()> interrupt;
  // Makes the new job of the live ranks (no runtime may be running); fills, for each of
  // its ranks, its rank in the job before.
  std::function<Status(std::vector<int>* previous_ranks)> shrink;
  // Whether `ok` holds on every rank of the new job: the same answer on all of them.
  std::function<bool(bool ok)> agree;
};

// In-place recovery from a lost rank: stops every runtime of this rank, re-forms the job
// from the live ranks with `reform`, and starts the global runtime and every process set
// again over them, each set under its id with its ranks renumbered (lost ranks left out;
// a set with none left is forgotten). The survivors agree that each of them succeeded;
// when a rank fails meanwhile, all of them do it again. `*sets` gets the ranks of every
// process set but the global one, by id. Collective over the survivors.
Status RebuildRuntimes(const JobReform& reform, const RuntimeFactory& factory,
                       const ProcessSetFactory& set_factory,
                       std::map<int32_t, std::vector<int>>* sets);

// Adds a process set after init (collective: every rank calls it, in the same order);
// needs HORDE_DYNAMIC_PROCESS_SETS=1.
Status AddProcessSet(std::vector<int> ranks, const ProcessSetFactory& set_factory, int32_t* id);
// Shuts the set's runtime down and forgets the set (collective, like AddProcessSet).
Status RemoveProcessSet(int32_t id);
// The runtime of set `id` and its ranks (unless `ranks` is null); an error for an unknown
// set, or when this rank is not in it.
Status FindProcessSet(int32_t id, std::shared_ptr<Runtime>* runtime, std::vector<int>* ranks);

}  // namespace horde

#pragma once

#include <cstdint>
#include <vector>

namespace horde {

class ProcessSet;
namespace detail {
// How horde registers sets; not for users. `ranks` sorted, `world_rank` this process's.
ProcessSet MakeProcessSet(int32_t id, std::vector<int> ranks, int world_rank);
}  // namespace detail

// Some ranks of the job that run collectives among themselves: pass it to any collective
// (e.g. AllreduceOptions::process_set, or allgather's last parameter), and the operation
// runs among the set's ranks only, negotiated on the set's own. Sets are registered on
// every rank, in the same order, including ranks outside the set: at
// init(process_sets), or with add_process_set() (which needs HORDE_DYNAMIC_PROCESS_SETS=1).
// A collective on a set throws horde::Error (kInvalidArgument) on a rank outside it, and
// on a set that was removed. A small value type; copies name the same set.
class ProcessSet {
 public:
  // The global set (id 0): every rank of the job, as global_process_set() returns.
  ProcessSet() = default;

  // The id collectives use, the same on every rank; 0 for the global set.
  int32_t id() const { return id_; }
  // The set's ranks (ranks of the job), sorted.
  std::vector<int> ranks() const;
  int size() const;
  // This process's rank within the set (its index in ranks()), or -1 outside it.
  int rank() const;
  bool included() const { return rank() >= 0; }

  friend bool operator==(const ProcessSet& a, const ProcessSet& b) {
    return a.id_ == b.id_ && a.ranks_ == b.ranks_;
  }
  friend bool operator!=(const ProcessSet& a, const ProcessSet& b) { return !(a == b); }

 private:
  friend ProcessSet detail::MakeProcessSet(int32_t id, std::vector<int> ranks, int world_rank);

  int32_t id_ = 0;
  // Empty for the global set, whose ranks(), size() and rank() are the job's (and, like
  // horde::size(), throw horde::Error before init()).
  std::vector<int> ranks_;
  int rank_ = -1;
};

// Every rank of the job (id 0), the collectives' default.
ProcessSet global_process_set();

// Registers a set over `ranks` (ranks of the job, in any order, each once) and returns
// it. Collective: every rank calls it with the same ranks, in the same order, members or
// not. Needs HORDE_DYNAMIC_PROCESS_SETS=1 (or HOROVOD_DYNAMIC_PROCESS_SETS=1) on every
// rank; otherwise, or for bad ranks or a set that already exists, throws horde::Error
// (kInvalidArgument).
ProcessSet add_process_set(std::vector<int> ranks);
// Shuts the set down and forgets it; later collectives on it throw. Collective, like
// add_process_set. The global set cannot be removed.
void remove_process_set(const ProcessSet& process_set);

}  // namespace horde

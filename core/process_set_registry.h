#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "horde/status.h"

namespace horde {

// The process sets this process knows, by id: id 0 is the global set (every rank);
// the others are numbered in the order they were added. Ids are never reused, so a
// stale id (of a removed set, or of one from before a shutdown) stays unknown. Every
// rank adds and removes sets in the same order, so ids agree across ranks.
//
// A set holds its own Runtime on the ranks that belong to it, and none elsewhere.
// Not thread-safe: core/api.cc guards the one registry of the process.
class ProcessSetRegistry {
 public:
  // `ranks` sorted, as ValidateProcessSetRanks leaves them; `runtime` null off the set.
  struct Entry {
    std::vector<int> ranks;
    std::shared_ptr<Runtime> runtime;
  };

  // Registers the global set (id 0) over ranks 0..size-1.
  void SetGlobal(int size, std::shared_ptr<Runtime> runtime);
  int32_t Add(std::vector<int> ranks, std::shared_ptr<Runtime> runtime);
  // Registers a set under an id it had before Clear() (when the job is re-formed).
  void Put(int32_t id, std::vector<int> ranks, std::shared_ptr<Runtime> runtime);
  // Forgets the set and returns its entry; the global set cannot be removed.
  Status Remove(int32_t id, Entry* removed);
  // Forgets every set, global included, and returns them (to be shut down).
  std::vector<Entry> Clear();

  // The set's entry; an error names the unknown id and the known ones.
  Status Find(int32_t id, const Entry** entry) const;
  // The id of the set with exactly these (sorted) ranks, or -1.
  int32_t IdOf(const std::vector<int>& ranks) const;
  // The ranks of every set but the global one, by id.
  std::map<int32_t, std::vector<int>> SetRanks() const;
  // Every runtime this process holds, global first.
  std::vector<std::shared_ptr<Runtime>> runtimes() const;

 private:
  std::map<int32_t, Entry> sets_;
  int32_t next_id_ = 1;
};

// Checks `ranks` for a set of a job of `world_size` ranks (not empty, each in range,
// none twice) and sorts them.
Status ValidateProcessSetRanks(int world_size, std::vector<int>* ranks);

// The ranks of a set after the job was re-formed without some ranks: `previous_ranks[i]`
// is the rank before of new rank i. Ranks no longer in the job are left out.
std::vector<int> RenumberedRanks(const std::vector<int>& ranks,
                                 const std::vector<int>& previous_ranks);

// "[0, 2, 3]", for error messages.
std::string RanksString(const std::vector<int>& ranks);

}  // namespace horde

#pragma once

#include <chrono>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/joined_ranks.h"
#include "core/rank_names.h"
#include "core/request.h"

namespace horde {

// When the rank that sent `request` submitted it, on the coordinator's clock: `received`
// less the time the rank says it had waited.
SteadyTime SubmittedAt(const Request& request, SteadyTime received);

// One place in the program that ranks submitted a name from, and those ranks.
struct CallSiteRanks {
  std::string call_site;  // "train.py:57"
  std::vector<int> ranks;
};

// The distinct call sites of `requests` (one per rank), each with the ranks that gave it,
// in the order the requests come; requests whose call site is unknown (empty) are left
// out.
std::vector<CallSiteRanks> CallSitesOf(const std::vector<const Request*>& requests);

// Says where ranks called `what` (e.g. "allreduce 'x'", or "it"): "ranks 0,2 called it at
// train.py:57, rank 3 at train.py:60", the first kCallSitesListed sites and how many more.
// Empty when no site is known.
constexpr size_t kCallSitesListed = 3;
std::string CalledAt(const std::vector<CallSiteRanks>& sites, const std::string& what,
                     const RankNames& names);

// A name the coordinator holds, as the stall inspector sees it.
struct PendingName {
  std::string name;
  OpType op = OpType::kAllreduce;
  SteadyTime first_requested;    // the earliest submission on any rank
  std::vector<int> asked;        // ranks that have asked for it
  std::vector<int> missing;      // ranks that have neither asked for it nor joined
  int32_t numbering_epoch = -1;  // the request's: -1 for a name the caller gave
  // Where the ranks that asked for it submitted it, as far as they know (CallSitesOf).
  std::vector<CallSiteRanks> call_sites;
};

// The coordinator's record of which ranks have asked for which names. A name is ready
// when every rank is present for it: has asked for it, or has joined (its JoinedRanks
// say which); a grouped name waits until its whole group is ready. Ready names come
// out in the order they were first requested, so every round's decisions are
// deterministic. Each name remembers when some rank first submitted it, for the stall
// inspector.
class MessageTable {
 public:
  explicit MessageTable(int world_size);

  // Records `request` (its rank must be set), received at `now`; the name's age counts
  // from the earliest submission of it, `now` less each request's waited time.
  void Add(const Request& request, SteadyTime now);

  // Removes and returns the ready names: for each, the requests of the ranks that asked,
  // in rank order.
  std::vector<std::vector<Request>> TakeReady();

  // `rank` counts as present for every name until the join completes.
  void Join(int rank) { joined_.Join(rank); }
  // Which ranks have joined, and the join's completion.
  JoinedRanks& joined() { return joined_; }
  const JoinedRanks& joined() const { return joined_; }

  size_t pending() const { return by_name_.size(); }
  int world_size() const { return world_size_; }

  // Names some ranks have asked for and other (not joined) ranks have not, oldest first.
  std::vector<PendingName> Waiting() const;
  // Removes `names` and the other members of their groups (a group missing a member can
  // never run); returns what was removed, oldest first.
  std::vector<PendingName> Remove(const std::vector<std::string>& names);

 private:
  struct Slot {
    std::vector<Request> by_rank;
    std::vector<bool> present;
    uint64_t arrival = 0;
    SteadyTime first_requested;
    std::string group;
    int32_t group_size = 0;
  };

  bool Present(const Slot& slot, int rank) const;
  bool Ready(const Slot& slot) const;
  PendingName PendingNameOf(const std::string& name, const Slot& slot) const;

  int world_size_;
  uint64_t next_arrival_ = 0;
  std::unordered_map<std::string, Slot> by_name_;
  JoinedRanks joined_;
};

}  // namespace horde

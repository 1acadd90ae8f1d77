#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/request.h"

namespace horde {

// The coordinator's record of which ranks have asked for which names, and which ranks
// have joined (run out of data). A name is ready when every rank has either asked for
// it or joined; a grouped name waits until its whole group is ready. Ready names come
// out in the order they were first requested, so every round's decisions are
// deterministic.
class MessageTable {
 public:
  explicit MessageTable(int world_size);

  void Add(const Request& request);

  // Removes and returns the ready names: for each, the requests of the ranks that asked,
  // in rank order.
  std::vector<std::vector<Request>> TakeReady();

  void Join(int rank);
  bool AllJoined() const { return joined_count_ == world_size_; }
  // Ranks that have joined, in rank order.
  std::vector<int> JoinedRanks() const;
  int last_joined() const { return last_joined_; }
  // Called once a join completes: every rank is active again.
  void ClearJoined();

  size_t pending() const { return by_name_.size(); }

 private:
  struct Slot {
    std::vector<Request> by_rank;
    std::vector<bool> present;
    uint64_t arrival = 0;
    std::string group;
    int32_t group_size = 0;
  };

  bool Ready(const Slot& slot) const;

  int world_size_;
  uint64_t next_arrival_ = 0;
  std::unordered_map<std::string, Slot> by_name_;
  std::vector<bool> joined_;
  int joined_count_ = 0;
  int last_joined_ = -1;
};

}  // namespace horde

#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/request.h"

namespace horde {

// The coordinator's record of which ranks have asked for which names. A name becomes
// ready when every rank has asked; ready names come out in the order they were first
// requested, so every round's decisions are deterministic.
class MessageTable {
 public:
  explicit MessageTable(int world_size) : world_size_(world_size) {}

  void Add(const Request& request);

  // Removes and returns the ready names' requests, each indexed by rank.
  std::vector<std::vector<Request>> TakeReady();

  size_t pending() const { return by_name_.size(); }

 private:
  struct Slot {
    std::vector<Request> by_rank;
    std::vector<bool> present;
    int count = 0;
    uint64_t arrival = 0;
  };

  int world_size_;
  uint64_t next_arrival_ = 0;
  std::unordered_map<std::string, Slot> by_name_;
};

}  // namespace horde

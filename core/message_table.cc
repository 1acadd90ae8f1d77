#include "core/message_table.h"

#include <algorithm>
#include <map>

#include "core/logging.h"

namespace horde {

MessageTable::MessageTable(int world_size)
    : world_size_(world_size), joined_(world_size, false) {}

void MessageTable::Add(const Request& request) {
  if (request.rank < 0 || request.rank >= world_size_) {
    HORDE_LOG(kError) << "ignoring request for '" << request.name << "' from invalid rank "
                      << request.rank;
    return;
  }
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) {
    Slot slot;
    slot.by_rank.resize(world_size_);
    slot.present.assign(world_size_, false);
    slot.arrival = next_arrival_++;
    slot.group = request.group;
    slot.group_size = request.group_size;
    it = by_name_.emplace(request.name, std::move(slot)).first;
  }
  Slot& slot = it->second;
  if (slot.present[request.rank]) {
    HORDE_LOG(kError) << "rank " << request.rank << " asked twice for '" << request.name
                      << "'; ignoring the second request";
    return;
  }
  slot.present[request.rank] = true;
  slot.by_rank[request.rank] = request;
}

bool MessageTable::Ready(const Slot& slot) const {
  for (int r = 0; r < world_size_; ++r) {
    if (!slot.present[r] && !joined_[r]) return false;
  }
  return true;
}

std::vector<std::vector<Request>> MessageTable::TakeReady() {
  std::vector<std::pair<uint64_t, std::string>> ready;
  std::map<std::string, int> ready_per_group;
  for (const auto& kv : by_name_) {
    if (!Ready(kv.second)) continue;
    ready.emplace_back(kv.second.arrival, kv.first);
    if (!kv.second.group.empty()) ++ready_per_group[kv.second.group];
  }
  std::sort(ready.begin(), ready.end());
  std::vector<std::vector<Request>> out;
  for (const auto& r : ready) {
    auto it = by_name_.find(r.second);
    const Slot& slot = it->second;
    if (!slot.group.empty() && ready_per_group[slot.group] < slot.group_size) continue;
    std::vector<Request> requests;
    for (int rank = 0; rank < world_size_; ++rank) {
      if (slot.present[rank]) requests.push_back(std::move(it->second.by_rank[rank]));
    }
    out.push_back(std::move(requests));
    by_name_.erase(it);
  }
  return out;
}

void MessageTable::Join(int rank) {
  if (rank < 0 || rank >= world_size_ || joined_[rank]) return;
  joined_[rank] = true;
  ++joined_count_;
  last_joined_ = rank;
}

std::vector<int> MessageTable::JoinedRanks() const {
  std::vector<int> ranks;
  for (int r = 0; r < world_size_; ++r) {
    if (joined_[r]) ranks.push_back(r);
  }
  return ranks;
}

void MessageTable::ClearJoined() {
  joined_.assign(world_size_, false);
  joined_count_ = 0;
  last_joined_ = -1;
}

}  // namespace horde

#include "core/message_table.h"

#include <algorithm>

#include "core/logging.h"

namespace horde {

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
  ++slot.count;
}

std::vector<std::vector<Request>> MessageTable::TakeReady() {
  std::vector<std::pair<uint64_t, std::string>> ready;
  for (const auto& kv : by_name_) {
    if (kv.second.count == world_size_) ready.emplace_back(kv.second.arrival, kv.first);
  }
  std::sort(ready.begin(), ready.end());
  std::vector<std::vector<Request>> out;
  out.reserve(ready.size());
  for (const auto& r : ready) {
    auto it = by_name_.find(r.second);
    out.push_back(std::move(it->second.by_rank));
    by_name_.erase(it);
  }
  return out;
}

}  // namespace horde

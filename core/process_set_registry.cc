#include "core/process_set_registry.h"

#include <algorithm>

namespace horde {

void ProcessSetRegistry::SetGlobal(int size, std::shared_ptr<Runtime> runtime) {
  Entry global;
  for (int r = 0; r < size; ++r) global.ranks.push_back(r);
  global.runtime = std::move(runtime);
  sets_[0] = std::move(global);
}

int32_t ProcessSetRegistry::Add(std::vector<int> ranks, std::shared_ptr<Runtime> runtime) {
  const int32_t id = next_id_++;
  sets_[id] = Entry{std::move(ranks), std::move(runtime)};
  return id;
}

void ProcessSetRegistry::Put(int32_t id, std::vector<int> ranks, std::shared_ptr<Runtime> runtime) {
  sets_[id] = Entry{std::move(ranks), std::move(runtime)};
  next_id_ = std::max(next_id_, id + 1);
}

Status ProcessSetRegistry::Remove(int32_t id, Entry* removed) {
  if (id == 0) return Status::InvalidArgument("the global process set (id 0) cannot be removed");
  const Entry* entry = nullptr;
  HORDE_RETURN_IF_ERROR(Find(id, &entry));
  *removed = *entry;
  sets_.erase(id);
  return Status::Ok();
}

std::vector<ProcessSetRegistry::Entry> ProcessSetRegistry::Clear() {
  std::vector<Entry> all;
  for (auto& [id, entry] : sets_) all.push_back(std::move(entry));
  sets_.clear();
  return all;
}

Status ProcessSetRegistry::Find(int32_t id, const Entry** entry) const {
  auto it = sets_.find(id);
  if (it == sets_.end()) {
    std::string known;
    for (const auto& [known_id, unused] : sets_)
      known += (known.empty() ? "" : ", ") + std::to_string(known_id);
    return Status::InvalidArgument("unknown process set id " + std::to_string(id) +
                                   " (removed, or never added); the sets known are [" + known +
                                   "]");
  }
  *entry = &it->second;
  return Status::Ok();
}

int32_t ProcessSetRegistry::IdOf(const std::vector<int>& ranks) const {
  for (const auto& [id, entry] : sets_) {
    if (entry.ranks == ranks) return id;
  }
  return -1;
}

std::map<int32_t, std::vector<int>> ProcessSetRegistry::SetRanks() const {
  std::map<int32_t, std::vector<int>> out;
  for (const auto& [id, entry] : sets_) {
    if (id != 0) out[id] = entry.ranks;
  }
  return out;
}

std::vector<std::shared_ptr<Runtime>> ProcessSetRegistry::runtimes() const {
  std::vector<std::shared_ptr<Runtime>> out;
  for (const auto& [id, entry] : sets_) {
    if (entry.runtime) out.push_back(entry.runtime);
  }
  return out;
}

std::vector<int> RenumberedRanks(const std::vector<int>& ranks,
                                 const std::vector<int>& previous_ranks) {
  std::vector<int> out;
  for (size_t now = 0; now < previous_ranks.size(); ++now) {
    if (std::binary_search(ranks.begin(), ranks.end(), previous_ranks[now])) {
      out.push_back(static_cast<int>(now));
    }
  }
  return out;
}

Status ValidateProcessSetRanks(int world_size, std::vector<int>* ranks) {
  if (ranks->empty())
    return Status::InvalidArgument("a process set needs at least one rank; got []");
  std::vector<int> sorted = *ranks;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= world_size) {
      return Status::InvalidArgument(
          "process set " + RanksString(*ranks) + ": rank " + std::to_string(sorted[i]) +
          " is out of range; ranks are 0 to " + std::to_string(world_size - 1));
    }
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      return Status::InvalidArgument("process set " + RanksString(*ranks) + ": rank " +
                                     std::to_string(sorted[i]) + " appears more than once");
    }
  }
  *ranks = std::move(sorted);
  return Status::Ok();
}

std::string RanksString(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

}  // namespace horde

// horde::ProcessSet and the sets' registration, over torch_ops (shared with Python).
#include <algorithm>
#include <utility>

#include "horde/process_set.h"
#include "torch_plugin/torch_ops.h"

namespace horde {

namespace detail {

ProcessSet MakeProcessSet(int32_t id, std::vector<int> ranks, int world_rank) {
  ProcessSet set;
  set.id_ = id;
  std::sort(ranks.begin(), ranks.end());  // as the registry keeps them
  auto it = std::find(ranks.begin(), ranks.end(), world_rank);
  set.rank_ = it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
  set.ranks_ = std::move(ranks);
  return set;
}

}  // namespace detail

std::vector<int> ProcessSet::ranks() const {
  if (id_ != 0) return ranks_;
  std::vector<int> all(torch_ops::CurrentTopology().size);
  for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
  return all;
}

int ProcessSet::size() const {
  return id_ != 0 ? static_cast<int>(ranks_.size()) : torch_ops::CurrentTopology().size;
}

int ProcessSet::rank() const { return id_ != 0 ? rank_ : torch_ops::CurrentTopology().rank; }

ProcessSet global_process_set() { return ProcessSet(); }

ProcessSet add_process_set(std::vector<int> ranks) {
  const int32_t id = torch_ops::AddProcessSet(ranks);
  return detail::MakeProcessSet(id, std::move(ranks), torch_ops::CurrentTopology().rank);
}

void remove_process_set(const ProcessSet& process_set) {
  torch_ops::RemoveProcessSet(process_set.id());
}

}  // namespace horde

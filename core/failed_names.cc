#include "core/failed_names.h"

#include <algorithm>

#include "core/logging.h"

namespace horde {

void FailedNames::Failed(const Response& failed, const std::vector<int>& owing) {
  if (owing.empty() || failed.names.size() != 1) return;
  Instance instance;
  instance.failed = failed;
  instance.owing = owing;
  instance.order = next_order_++;
  by_name_[failed.names[0]].push_back(std::move(instance));
  debts_ += owing.size();
  while (debts_ > kMaxDebts) ForgetOldest();
}

std::optional<Response> FailedNames::Settle(const Request& request) {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return std::nullopt;
  std::deque<Instance>& instances = it->second;
  // The oldest instance this rank owes: its requests for the name pair in order.
  for (auto instance = instances.begin(); instance != instances.end(); ++instance) {
    auto owed = std::find(instance->owing.begin(), instance->owing.end(), request.rank);
    if (owed == instance->owing.end()) continue;
    Response error = instance->failed;
    error.ranks = {request.rank};
    instance->owing.erase(owed);
    --debts_;
    if (instance->owing.empty()) instances.erase(instance);
    if (instances.empty()) by_name_.erase(it);
    return error;
  }
  return std::nullopt;
}

void FailedNames::Forget(int rank) {
  for (auto it = by_name_.begin(); it != by_name_.end();) {
    for (auto instance = it->second.begin(); instance != it->second.end();) {
      auto owed = std::find(instance->owing.begin(), instance->owing.end(), rank);
      if (owed != instance->owing.end()) {
        instance->owing.erase(owed);
        --debts_;
      }
      instance = instance->owing.empty() ? it->second.erase(instance) : instance + 1;
    }
    it = it->second.empty() ? by_name_.erase(it) : std::next(it);
  }
}

void FailedNames::ForgetOldest() {
  auto oldest = by_name_.end();
  for (auto it = by_name_.begin(); it != by_name_.end(); ++it) {
    if (oldest == by_name_.end() || it->second.front().order < oldest->second.front().order) {
      oldest = it;
    }
  }
  if (oldest == by_name_.end()) return;
  const Instance& instance = oldest->second.front();
  HORDE_LOG(kError) << "forgetting that " << instance.owing.size()
                    << " rank(s) still owe a request for '" << oldest->first
                    << "', which failed elsewhere: over " << kMaxDebts
                    << " such requests are outstanding, so those ranks' next request for "
                       "it will pair with the others' next one";
  debts_ -= instance.owing.size();
  oldest->second.pop_front();
  if (oldest->second.empty()) by_name_.erase(oldest);
}

}  // namespace horde

#include "core/response_cache.h"

#include "core/message_fields.h"
#include "core/op_traits.h"

namespace horde {

bool SameSignature(const Request& a, const Request& b) { return EqualIn<kSignature>(a, b); }

std::vector<Response> SplitResponse(const Response& response) {
  const size_t n = response.names.size();
  if (n == 1) return {response};
  if (TraitsOf(response.op).fusion == Fusion::kNone) return {};
  std::vector<Response> singles(n, response);
  // Each per-name list holds the same number of entries per name, in name order.
  FieldList<Response>::ForEach([&](auto field) {
    if constexpr ((decltype(field)::roles & kPerName) != 0) {
      const auto& fused = response.*field.member;
      const size_t each = fused.size() / n;
      for (size_t i = 0; i < n; ++i) {
        (singles[i].*field.member).assign(fused.begin() + i * each, fused.begin() + (i + 1) * each);
      }
    }
  });
  return singles;
}

ResponseCache::Match ResponseCache::Find(const Request& request, uint32_t* position) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return Match::kMiss;
  *position = it->second;
  const Entry& entry = *slots_[it->second];
  return entry.mine && SameSignature(*entry.mine, request) ? Match::kHit : Match::kChanged;
}

void ResponseCache::Put(const Response& response, const Request* mine) {
  if (capacity_ == 0) return;
  const std::string& name = response.names[0];
  auto existing = by_name_.find(name);
  if (existing != by_name_.end()) Erase(existing->second);
  if (by_name_.size() >= capacity_) Erase(recency_.front());
  const uint32_t position = FreePosition();
  Entry entry;
  entry.response = response;
  if (mine) entry.mine = *mine;
  entry.recency = recency_.insert(recency_.end(), position);
  slots_[position] = std::move(entry);
  by_name_[name] = position;
}

void ResponseCache::Touch(uint32_t position) {
  Entry& entry = *slots_[position];
  recency_.splice(recency_.end(), recency_, entry.recency);
}

void ResponseCache::Erase(uint32_t position) {
  Entry& entry = *slots_[position];
  by_name_.erase(entry.response.names[0]);
  recency_.erase(entry.recency);
  slots_[position].reset();
  free_.insert(position);
}

bool ResponseCache::Holds(uint32_t position, const std::string& name) const {
  return position < slots_.size() && slots_[position] &&
         slots_[position]->response.names[0] == name;
}

std::vector<std::string> ResponseCache::NamesByPosition() const {
  std::vector<std::string> names;
  names.reserve(slots_.size());
  for (const auto& slot : slots_) names.push_back(slot ? slot->response.names[0] : std::string());
  return names;
}

uint32_t ResponseCache::FreePosition() {
  if (!free_.empty()) {
    const uint32_t position = *free_.begin();
    free_.erase(free_.begin());
    return position;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

}  // namespace horde

#include "core/message_table.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/logging.h"

namespace horde {
namespace {

// Names keyed by arrival, in arrival order (the order of every decision the table makes).
std::vector<PendingName> OldestFirst(std::vector<std::pair<uint64_t, PendingName>> keyed) {
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PendingName> out;
  for (auto& k : keyed) out.push_back(std::move(k.second));
  return out;
}

}  // namespace

std::vector<CallSiteRanks> CallSitesOf(const std::vector<const Request*>& requests) {
  std::vector<CallSiteRanks> sites;
  for (const Request* request : requests) {
    if (request->call_site.empty()) continue;
    auto same = std::find_if(sites.begin(), sites.end(), [&](const CallSiteRanks& site) {
      return site.call_site == request->call_site;
    });
    if (same == sites.end()) {
      same = sites.insert(sites.end(), CallSiteRanks{request->call_site, {}});
    }
    same->ranks.push_back(request->rank);
  }
  return sites;
}

std::string CalledAt(const std::vector<CallSiteRanks>& sites, const std::string& what,
                     const RankNames& names) {
  std::string text;
  for (size_t i = 0; i < sites.size() && i < kCallSitesListed; ++i) {
    text += i == 0 ? names.List(sites[i].ranks) + " called " + what + " at "
                   : ", " + names.List(sites[i].ranks) + " at ";
    text += sites[i].call_site;
  }
  if (sites.size() > kCallSitesListed) {
    const size_t more = sites.size() - kCallSitesListed;
    text += " and " + std::to_string(more) + " more call site" + (more == 1 ? "" : "s");
  }
  return text;
}

SteadyTime SubmittedAt(const Request& request, SteadyTime received) {
  // Bounded (at a year) so that no value off the wire can overflow the clock's arithmetic.
  constexpr int64_t kLongestWait = int64_t{365} * 24 * 3600 * 1000000;
  return received - std::chrono::microseconds(
                        std::clamp<int64_t>(request.waited_microseconds, 0, kLongestWait));
}

MessageTable::MessageTable(int world_size) : world_size_(world_size), joined_(world_size) {}

void MessageTable::Add(const Request& request, SteadyTime now) {
  if (request.rank < 0 || request.rank >= world_size_) {
    HORDE_LOG(kError) << "ignoring request for '" << request.name << "' from invalid rank "
                      << request.rank;
    return;
  }
  const SteadyTime submitted = SubmittedAt(request, now);
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) {
    Slot slot;
    slot.by_rank.resize(world_size_);
    slot.present.assign(world_size_, false);
    slot.arrival = next_arrival_++;
    slot.first_requested = submitted;
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
  slot.first_requested = std::min(slot.first_requested, submitted);
}

bool MessageTable::Present(const Slot& slot, int rank) const {
  return slot.present[rank] || joined_.Has(rank);
}

bool MessageTable::Ready(const Slot& slot) const {
  for (int r = 0; r < world_size_; ++r) {
    if (!Present(slot, r)) return false;
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

PendingName MessageTable::PendingNameOf(const std::string& name, const Slot& slot) const {
  PendingName pending;
  pending.name = name;
  pending.first_requested = slot.first_requested;
  std::vector<const Request*> asked;
  for (int r = 0; r < world_size_; ++r) {
    if (slot.present[r]) {
      asked.push_back(&slot.by_rank[r]);
      pending.asked.push_back(r);
    }
    if (!Present(slot, r)) pending.missing.push_back(r);
  }
  if (!asked.empty()) {
    pending.op = asked[0]->op;
    pending.numbering_epoch = asked[0]->numbering_epoch;
  }
  pending.call_sites = CallSitesOf(asked);
  return pending;
}

std::vector<PendingName> MessageTable::Waiting() const {
  std::vector<std::pair<uint64_t, PendingName>> waiting;
  for (const auto& kv : by_name_) {
    PendingName pending = PendingNameOf(kv.first, kv.second);
    if (!pending.missing.empty()) waiting.emplace_back(kv.second.arrival, std::move(pending));
  }
  return OldestFirst(std::move(waiting));
}

std::vector<PendingName> MessageTable::Remove(const std::vector<std::string>& names) {
  std::set<std::string> doomed, groups;
  for (const auto& name : names) {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) continue;
    doomed.insert(name);
    if (!it->second.group.empty()) groups.insert(it->second.group);
  }
  for (const auto& kv : by_name_) {
    if (groups.count(kv.second.group)) doomed.insert(kv.first);
  }
  std::vector<std::pair<uint64_t, PendingName>> removed;
  for (const auto& name : doomed) {
    auto it = by_name_.find(name);
    removed.emplace_back(it->second.arrival, PendingNameOf(name, it->second));
    by_name_.erase(it);
  }
  return OldestFirst(std::move(removed));
}

}  // namespace horde

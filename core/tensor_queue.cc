#include "core/tensor_queue.h"

#include <algorithm>
#include <thread>

namespace horde {

Status TensorQueue::Add(std::vector<Request>* requests, std::vector<TensorEntry>* entries) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return close_status_;
    // Entries go in one by one, so a name given twice in this batch is found too; on a
    // duplicate the batch's entries go back to the caller: all or nothing.
    for (size_t i = 0; i < requests->size(); ++i) {
      const std::string& name = (*requests)[i].name;
      if (!Insert(name, &(*entries)[i])) {
        for (size_t j = 0; j < i; ++j) (*entries)[j] = Remove(entries_.find((*requests)[j].name));
        return Status::InvalidArgument("an operation named '" + name +
                                       "' is already in flight; names must be unique until "
                                       "the operation completes");
      }
    }
    for (Request& request : *requests) new_requests_.push_back(std::move(request));
    has_new_requests_.store(!new_requests_.empty(), std::memory_order_release);
  }
  cv_.notify_one();
  return Status::Ok();
}

bool TensorQueue::Insert(const std::string& name, TensorEntry* entry) {
  if (spare_nodes_.empty()) {
    auto [it, inserted] = entries_.try_emplace(name);  // leaves `entry` alone on failure
    if (inserted) it->second = std::move(*entry);
    return inserted;
  }
  EntryMap::node_type node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.key() = name;  // into the spare key's capacity
  node.mapped() = std::move(*entry);
  auto result = entries_.insert(std::move(node));
  if (result.inserted) return true;
  *entry = std::move(result.node.mapped());
  spare_nodes_.push_back(std::move(result.node));
  return false;
}

TensorEntry TensorQueue::Remove(EntryMap::iterator it) {
  EntryMap::node_type node = entries_.extract(it);
  TensorEntry entry = std::move(node.mapped());
  if (spare_nodes_.size() < kMaxSpareNodes) spare_nodes_.push_back(std::move(node));
  return entry;
}

void TensorQueue::WaitForWork(std::chrono::microseconds timeout, std::chrono::microseconds spin) {
  const auto spin_until = std::chrono::steady_clock::now() + std::min(spin, timeout);
  while (!has_new_requests_.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < spin_until) {
    std::this_thread::yield();
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return woken_ || !new_requests_.empty(); });
  woken_ = false;
}

void TensorQueue::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  cv_.notify_one();
}

void TensorQueue::TakeNewRequests(std::vector<Request>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  out->swap(new_requests_);
  has_new_requests_.store(false, std::memory_order_release);
}

void TensorQueue::TakeEntries(const std::vector<std::string>& names,
                              std::vector<TensorEntry>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& name : names) {
    auto it = entries_.find(name);
    if (it != entries_.end()) out->push_back(Remove(it));
  }
}

std::vector<TensorEntry> TensorQueue::Close(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  close_status_ = status;
  std::vector<TensorEntry> out;
  for (auto& kv : entries_) out.push_back(std::move(kv.second));
  entries_.clear();
  spare_nodes_.clear();
  new_requests_.clear();
  has_new_requests_.store(false, std::memory_order_release);
  return out;
}

}  // namespace horde

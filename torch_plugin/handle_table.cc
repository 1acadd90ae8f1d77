#include "torch_plugin/handle_table.h"

#include <chrono>
#include <string>
#include <thread>

namespace horde {
namespace {

constexpr std::chrono::microseconds kSpinBeforeSleeping(50);

Status UnknownHandle(HandleId handle) {
  return Status::InvalidArgument("unknown handle " + std::to_string(handle) +
                                 ": it was never issued or has already been synchronized");
}

}  // namespace

HandleId HandleTable::Allocate() {
  std::lock_guard<std::mutex> lock(mu_);
  const HandleId handle = next_handle_++;
  slots_.emplace(handle, Slot());
  return handle;
}

void HandleTable::SetOutput(HandleId handle, std::shared_ptr<Tensor> output) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(handle);
  if (it != slots_.end() && !it->second.released) it->second.output = std::move(output);
}

void HandleTable::Complete(HandleId handle, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(handle);
    if (it == slots_.end()) return;
    if (it->second.released) {
      slots_.erase(it);
      return;
    }
    it->second.done = true;
    it->second.status = status;
  }
  cv_.notify_all();
}

Status HandleTable::Poll(HandleId handle, bool* done) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(handle);
  if (it == slots_.end() || it->second.released) return UnknownHandle(handle);
  *done = it->second.done;
  return Status::Ok();
}

Status HandleTable::WaitAndRelease(HandleId handle, std::shared_ptr<Tensor>* output) {
  std::unique_lock<std::mutex> lock(mu_);
  // Looked up afresh after every unlock: another thread's Allocate may rehash the map,
  // which invalidates its iterators.
  auto done = [&](bool* known) {
    auto it = slots_.find(handle);
    *known = it != slots_.end() && !it->second.released;
    return !*known || it->second.done;
  };
  bool known = false;
  // A small collective completes within microseconds: poll briefly (yielding the core)
  // before sleeping, so it is not followed by the cost of a thread wake-up.
  const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleeping;
  while (!done(&known) && std::chrono::steady_clock::now() < spin_until) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  cv_.wait(lock, [&] { return done(&known); });
  if (!known) return UnknownHandle(handle);
  auto it = slots_.find(handle);
  Status status = it->second.status;
  *output = std::move(it->second.output);
  slots_.erase(it);
  return status;
}

void HandleTable::Release(HandleId handle) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(handle);
    if (it == slots_.end()) return;
    if (it->second.done) {
      slots_.erase(it);
    } else {
      it->second.released = true;
      it->second.output.reset();
    }
  }
  cv_.notify_all();  // a thread still waiting on it learns that it is gone
}

size_t HandleTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_.size();
}

}  // namespace horde

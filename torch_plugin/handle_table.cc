#include "torch_plugin/handle_table.h"

#include <chrono>
#include <thread>

namespace horde {
namespace {

constexpr std::chrono::microseconds kSpinBeforeSleeping(50);

Status UnknownHandle(int handle) {
  return Status::InvalidArgument("unknown handle " + std::to_string(handle) +
                                 ": it was never issued or has already been synchronized");
}

}  // namespace

int HandleTable::Allocate() {
  std::lock_guard<std::mutex> lock(mu_);
  int handle = next_handle_++;
  slots_.emplace(handle, Slot());
  return handle;
}

void HandleTable::SetOutput(int handle, std::shared_ptr<Tensor> output) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(handle);
  if (it != slots_.end()) it->second.output = std::move(output);
}

void HandleTable::Complete(int handle, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(handle);
    if (it == slots_.end()) return;
    it->second.done = true;
    it->second.status = status;
  }
  cv_.notify_all();
}

Status HandleTable::Poll(int handle, bool* done) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(handle);
  if (it == slots_.end()) return UnknownHandle(handle);
  *done = it->second.done;
  return Status::Ok();
}

Status HandleTable::WaitAndRelease(int handle, std::shared_ptr<Tensor>* output) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = slots_.find(handle);
  if (it == slots_.end()) return UnknownHandle(handle);
  // A small collective completes within microseconds: poll briefly (yielding the core)
  // before sleeping, so it is not followed by the cost of a thread wake-up.
  const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleeping;
  while (!it->second.done && std::chrono::steady_clock::now() < spin_until) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  cv_.wait(lock, [&] { return it->second.done; });
  Status status = it->second.status;
  *output = std::move(it->second.output);
  slots_.erase(it);
  return status;
}

}  // namespace horde

#include "torch_plugin/operation_table.h"

#include <chrono>
#include <string>
#include <thread>
#include <utility>

#include "core/api.h"
#include "core/timeline.h"

namespace horde {
namespace torch_ops {
namespace {

constexpr std::chrono::microseconds kSpinBeforeSleeping(50);

Status UnknownHandle(HandleId handle) {
  return Status::InvalidArgument("unknown handle " + std::to_string(handle) +
                                 ": it was never issued or has already been synchronized");
}

}  // namespace

OperationTable& OperationTable::OfProcess() {
  static OperationTable* table = new OperationTable();
  return *table;
}

HandleId OperationTable::Allocate(size_t members, bool grouped, std::string context) {
  std::lock_guard<std::mutex> lock(mu_);
  const HandleId handle = next_handle_++;
  operations_.emplace(handle, Operation(members, grouped, std::move(context)));
  return handle;
}

void OperationTable::SetInPlaceTarget(HandleId handle, size_t member, const at::Tensor& tensor,
                                      bool copy_back) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = operations_.find(handle);
  if (it != operations_.end()) it->second.SetInPlaceTarget(member, tensor, copy_back);
}

void OperationTable::SetReceivedSplits(HandleId handle, const at::Tensor& received_splits) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = operations_.find(handle);
  if (it != operations_.end()) it->second.SetReceivedSplits(received_splits);
}

void OperationTable::SetOutput(HandleId handle, size_t member, std::shared_ptr<Tensor> output) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = operations_.find(handle);
  if (it != operations_.end()) it->second.SetOutput(member, std::move(output));
}

void OperationTable::Complete(HandleId handle, size_t member, const Status& status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = operations_.find(handle);
    if (it == operations_.end()) return;
    Operation& operation = it->second;
    operation.Complete(member, status);
    if (!operation.done()) return;
    if (operation.abandoned()) {
      operations_.erase(it);
      return;
    }
  }
  cv_.notify_all();
}

Status OperationTable::Poll(HandleId handle, bool* done) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = operations_.find(handle);
  if (it == operations_.end() || it->second.abandoned()) return UnknownHandle(handle);
  *done = it->second.done();
  return Status::Ok();
}

Status OperationTable::WaitAndTake(HandleId handle, Operation* operation) {
  // Looked up before taking mu_: shutdown holds the runtimes' lock while the background
  // thread completes operations under mu_.
  const FrameworkWaitScope blocked(CurrentTimeline());
  std::unique_lock<std::mutex> lock(mu_);
  // Looked up afresh after every unlock: another thread's Allocate may rehash the map,
  // which invalidates its iterators.
  auto done = [&](bool* known) {
    auto it = operations_.find(handle);
    *known = it != operations_.end() && !it->second.abandoned();
    return !*known || it->second.done();
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
  auto it = operations_.find(handle);
  *operation = std::move(it->second);
  operations_.erase(it);
  return operation->status();
}

void OperationTable::Release(HandleId handle) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = operations_.find(handle);
    if (it == operations_.end()) return;
    if (it->second.done()) {
      operations_.erase(it);
    } else {
      it->second.Abandon();
    }
  }
  cv_.notify_all();  // a thread still waiting on it learns that it is gone
}

size_t OperationTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return operations_.size();
}

}  // namespace torch_ops
}  // namespace horde

#include "core/completion_counter.h"

#include <chrono>
#include <thread>

namespace horde {
namespace {

// Operations of a step usually finish within microseconds of each other: poll briefly
// (yielding the core) before sleeping, so the last one is not followed by a wake-up.
constexpr std::chrono::microseconds kSpinBeforeSleeping(50);

}  // namespace

void CompletionCounter::Expect(size_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ += count;
}

void CompletionCounter::Complete(size_t tag, const Status& status) {
  bool last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!status.ok()) {
      // A failure every rank shares is the one to report: the caller's peers report it too.
      if (first_failure_.ok() || (status.agreed() && !first_failure_.agreed())) {
        first_failure_ = status;
      }
      failed_tags_.push_back(tag);
    }
    last = --pending_ == 0;
  }
  if (last) cv_.notify_all();
}

Status CompletionCounter::Wait(std::vector<size_t>* failed_tags) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto spin_until = std::chrono::steady_clock::now() + kSpinBeforeSleeping;
  while (pending_ > 0 && std::chrono::steady_clock::now() < spin_until) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  cv_.wait(lock, [this] { return pending_ == 0; });
  Status failure = first_failure_;
  first_failure_ = Status::Ok();
  if (failed_tags != nullptr) failed_tags->swap(failed_tags_);
  failed_tags_.clear();
  return failure;
}

size_t CompletionCounter::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_;
}

}  // namespace horde

#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include "horde/status.h"

namespace horde {

// Completion of many operations at once, without a handle each: the submitter counts
// operations in with Expect(), each operation's callback counts itself out with
// Complete(), and one Wait() returns when all have, with the first failure. The
// background thread takes one short lock per operation and wakes the waiter only for
// the last one. Thread-safe.
class CompletionCounter {
 public:
  // `count` more operations will complete (call before submitting them).
  void Expect(size_t count);
  // Operation `tag` (the submitter's number for it) has completed with `status`.
  void Complete(size_t tag, const Status& status);
  // Blocks until every expected operation has completed; returns the first failure (or
  // Ok; the first one every rank shares, Status::agreed(), if any) and the tags of every
  // failed operation, then starts counting afresh.
  Status Wait(std::vector<size_t>* failed_tags);
  // Operations expected and not yet completed.
  size_t pending() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t pending_ = 0;
  Status first_failure_;
  std::vector<size_t> failed_tags_;
};

}  // namespace horde

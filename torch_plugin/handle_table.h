#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/tensor.h"
#include "horde/status.h"

namespace horde {

// A handle's number. 64-bit and never reused: a job issuing a billion operations a
// second would need 292 years to run out, so no id can ever name two operations (a
// stale handle kept by a script, or a late release, never touches a newer one).
using HandleId = int64_t;

// Handles of asynchronous operations, as frameworks see them: an integer that can be
// polled and waited on, and that carries the operation's output and final status.
// Completion comes from the runtime's background thread. Thread-safe.
//
// An entry lives until it is waited on (WaitAndRelease) or released by a handle object
// dropped without waiting (Release), so a long job keeps none it no longer needs.
class HandleTable {
 public:
  // `first`: the first id issued (tests start near the 32-bit limit).
  explicit HandleTable(HandleId first = 0) : next_handle_(first) {}

  HandleId Allocate();
  void SetOutput(HandleId handle, std::shared_ptr<Tensor> output);
  void Complete(HandleId handle, const Status& status);

  // InvalidArgument for a handle that does not exist (never issued, or already waited on).
  Status Poll(HandleId handle, bool* done);
  // Blocks until the operation completes, then forgets the handle and returns its output.
  Status WaitAndRelease(HandleId handle, std::shared_ptr<Tensor>* output);
  // Forgets a handle nobody will wait on: at once if its operation has completed, else
  // as soon as it does (its output and status are dropped). Unknown handles are ignored.
  void Release(HandleId handle);

  // Handles issued and not yet forgotten.
  size_t size() const;

 private:
  struct Slot {
    bool done = false;
    bool released = false;  // dropped unwaited: forget it once done
    Status status;
    std::shared_ptr<Tensor> output;
  };

  mutable std::mutex mu_;
  std::condition_variable cv_;
  HandleId next_handle_;
  std::unordered_map<HandleId, Slot> slots_;
};

}  // namespace horde

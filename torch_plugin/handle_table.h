#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "core/status.h"
#include "core/tensor.h"

namespace horde {

// Handles of asynchronous operations, as frameworks see them: an integer that can be
// polled and waited on, and that carries the operation's output and final status.
// Completion comes from the runtime's background thread. Thread-safe.
class HandleTable {
 public:
  int Allocate();
  void SetOutput(int handle, std::shared_ptr<Tensor> output);
  void Complete(int handle, const Status& status);

  // InvalidArgument for a handle that does not exist (never issued, or already waited on).
  Status Poll(int handle, bool* done);
  // Blocks until the operation completes, then forgets the handle and returns its output.
  Status WaitAndRelease(int handle, std::shared_ptr<Tensor>* output);

 private:
  struct Slot {
    bool done = false;
    Status status;
    std::shared_ptr<Tensor> output;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  int next_handle_ = 0;
  std::unordered_map<int, Slot> slots_;
};

}  // namespace horde

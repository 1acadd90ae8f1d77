#pragma once

#include <ATen/ATen.h>

#include <mutex>
#include <unordered_map>

#include "torch_plugin/handle_table.h"

namespace horde {
namespace torch_ops {

// In-place operations, for the Python extension and the C++ API alike: the operation
// works on the caller's tensor itself, or, when that is not contiguous, on a contiguous
// copy whose result is copied back into it when the handle is waited on. The wait then
// returns the caller's tensor either way, as torch's in-place operations do. Thread-safe.
class InPlaceTargets {
 public:
  // The process's, beside the handle table whose handles it is keyed by.
  static InPlaceTargets& OfProcess();
  // The tensor the operation works on for `tensor`: itself if contiguous, else a
  // contiguous copy; outside autograd either way.
  static at::Tensor Work(const at::Tensor& tensor);
  // Makes Finish(handle, ...) return `tensor`, which the operation of `handle` works on
  // through Work(tensor).
  void Track(HandleId handle, const at::Tensor& tensor);
  // What waiting on `handle` returns, given the operation's output: the tracked tensor,
  // after copying `output` into it if the operation ran on a copy, else `output`. Forgets
  // the handle; Forget() alone drops it without copying (the handle was abandoned, or its
  // operation failed).
  at::Tensor Finish(HandleId handle, const at::Tensor& output);
  void Forget(HandleId handle);
  // Handles tracked and not yet finished or forgotten (for leak checks).
  size_t size() const;

 private:
  struct Target {
    at::Tensor tensor;
    bool copy_back;
  };

  mutable std::mutex mu_;
  std::unordered_map<HandleId, Target> targets_;
};

}  // namespace torch_ops
}  // namespace horde

#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/completion_counter.h"
#include "core/request.h"
#include "core/tensor.h"
#include "horde/data_type.h"
#include "torch_plugin/torch_tensor.h"

namespace horde {
namespace torch_ops {

// In-place allreduces of contiguous tensors for DistributedOptimizer's path: queued in
// batches (one queue lock and one wake-up of the background thread per batch) and
// completed by count rather than by handle (no handle table entry and no waiter to wake
// per tensor). What a batch needs is kept from batch to batch (the request and entry
// vectors, each tag's view of its tensor), so that a steady-state step allocates little
// per tensor. Not thread-safe: the owner serializes its calls.
class CountedAllreduce {
 public:
  CountedAllreduce(ReduceOp op, double prescale, double postscale, int32_t process_set);

  // Queues tensors[i] as an allreduce named names[i] that ends with a count-down under
  // tags[i] (tags are small: one view is kept per tag). With a non-empty `group` they are
  // negotiated as one group of that name (members "<group>.<i>") and `names` is unused.
  // Local misuse throws horde::Error before anything is queued; a failure to queue
  // counts every tag down with it and throws it.
  void Enqueue(const std::vector<at::Tensor>& tensors, const std::vector<std::string>& names,
               const std::string& group, const std::vector<size_t>& tags);
  // Waits for everything submitted; returns the first failure (in the process set's
  // context) and the tags of every failed operation. The tensors are then no longer
  // referenced from here.
  Status Wait(std::vector<size_t>* failed_tags);

 private:
  const ReduceOp op_;
  const double prescale_;
  const double postscale_;
  const int32_t process_set_;
  const std::shared_ptr<CompletionCounter> done_ = std::make_shared<CompletionCounter>();
  std::string context_;  // of the last submission's process set
  std::vector<Request> requests_;
  std::vector<TensorEntry> entries_;
  std::vector<std::shared_ptr<TorchTensor>> views_;  // by tag, reused step after step
};

}  // namespace torch_ops
}  // namespace horde

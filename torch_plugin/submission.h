#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "core/tensor.h"
#include "torch_plugin/torch_tensor.h"

namespace horde {
namespace torch_ops {

// What every submission from torch_ops shares: finding the process set, the checks of
// its tensors, and the request and entry describing one operation.

// Where an operation on a process set runs.
struct Target {
  std::shared_ptr<Runtime> runtime;
  std::vector<int> ranks;  // the set's world ranks
  // What the set's failures begin with, e.g. "process set 1 (ranks [0, 2]): ". Empty for
  // the global set.
  std::string context;
};

// The set's target; throws horde::Error for an unknown set or one this rank is not in.
Target RequireSet(int32_t process_set);
// The set's runtime and the context of its failures (see Target); unlike RequireSet, it
// copies nothing for the global set (the per-gradient path).
std::shared_ptr<Runtime> RequireRuntime(int32_t process_set, std::string* context);
// `status` with `context` (see Target) in front of its message.
Status InContext(const Status& status, const std::string& context);
// Throws kInvalidArgument naming `op` and the tensor's `role` unless it is defined and
// contiguous.
void CheckTensor(const at::Tensor& t, const char* role, const std::string& op);
// Throws unless `landing` can take the result of an operation on `input` whose output
// shape the operation decides: contiguous, of the input's dtype and device.
void CheckLanding(const at::Tensor& input, const at::Tensor& landing, const std::string& op);
// Checks `input` (and `output`, if defined: the input's dtype, shape and device) and
// fills the request's dtype, shape and device and the entry's tensors and ready event;
// the caller adds the completion callback (and, without an output, the allocator).
// With `input_view`, the view an earlier call left there is pointed at `input` (no
// allocation): the caller guarantees that no operation holds it any more (every
// operation that did has completed, and completion lets go first: CompleteEntry). Throws
// horde::Error.
void BindTensors(const at::Tensor& input, const at::Tensor& output, Request* request,
                 TensorEntry* entry, std::shared_ptr<TorchTensor>* input_view = nullptr);

}  // namespace torch_ops
}  // namespace horde

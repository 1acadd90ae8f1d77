#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/completion_counter.h"
#include "horde/data_type.h"

namespace horde {
namespace torch_ops {

// In-place allreduces of contiguous tensors, queued as one batch (one queue lock and
// one wake-up of the background thread) and completed through `done` rather than
// handles: tensors[i]'s operation ends with done->Complete(tags[i], status), with no
// handle table entry and no waiter to wake per tensor. DistributedOptimizer's path.
//
// With a non-empty `group` they are negotiated as one group of that name (members
// "<group>.<i>"); otherwise tensors[i] is named names[i]. Local misuse throws
// horde::Error before anything is queued; a failure to queue completes every tag with
// it and throws it.
void AllreduceInPlaceCounted(const std::vector<at::Tensor>& tensors,
                             const std::vector<std::string>& names, const std::string& group,
                             const std::vector<size_t>& tags, ReduceOp op, double prescale,
                             double postscale, int32_t process_set,
                             const std::shared_ptr<CompletionCounter>& done);

}  // namespace torch_ops
}  // namespace horde

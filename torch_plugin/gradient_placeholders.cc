// What GradientReducer reduces in place of a gradient this rank failed to prepare. The
// other ranks are already reducing that name (or its group, or its bucket) and would
// wait for it; the placeholder's values do not matter, since every rank then learns that
// the step failed (StepOutcome), only its layout does: the same name, shape and kind of
// collective as the gradient would have had.
#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/GradMode.h>

#include <exception>
#include <vector>

#include "torch_plugin/gradient_reducer.h"
#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {

// The gradient itself where it is dense and contiguous (nothing is allocated when memory
// is what ran out), else zeros shaped like the parameter.
at::Tensor GradientReducer::DensePlaceholder(size_t i) const {
  const at::Tensor& grad = slots_[i].param.grad();
  if (grad.defined() && !grad.is_sparse() && grad.is_contiguous()) return grad;
  return at::zeros_like(slots_[i].param, at::MemoryFormat::Contiguous);
}

void GradientReducer::EnqueuePlaceholder(size_t i) {
  Slot& slot = slots_[i];
  slot.started = true;
  c10::NoGradGuard no_grad;
  if (buckets_) {
    // The bucket's buffer is what is reduced: it only needs this member counted.
    if (GradientBuckets::Bucket* bucket = buckets_->MarkReady(i)) {
      const size_t tag = slots_.size() + (bucket - buckets_->buckets().data());
      allreduce_->Enqueue({bucket->buffer}, {bucket->name}, "", {tag});
    }
    return;
  }
  if (slot.group >= 0) {
    Group& group = groups_[slot.group];
    std::vector<at::Tensor> sent;
    for (size_t m : group.members) {
      slots_[m].started = true;  // a hook that fires later starts nothing more
      slots_[m].placeholder = true;
      slots_[m].sent = DensePlaceholder(m);
      sent.push_back(slots_[m].sent);
    }
    group.ready.clear();
    allreduce_->Enqueue(sent, {}, slots_[group.members.front()].name + ".group", group.members);
    return;
  }
  slot.placeholder = true;
  const at::Tensor& grad = slot.param.grad();
  const bool sparse = slot.densified == 0 && !options_.sparse_as_dense &&
                      (grad.defined() ? grad.is_sparse() : slot.layout > 0);
  if (!sparse) {
    slot.sent = DensePlaceholder(i);
    one_slot_.assign(1, i);
    return EnqueueSlots(one_slot_);
  }
  // No rows: the allgathers of its indices and values, as StartSparse would start them.
  const int64_t sparse_dim = grad.defined() ? grad.sparse_dim() : slot.layout;
  std::vector<int64_t> value_shape{0};
  for (int64_t d = sparse_dim; d < slot.param.dim(); ++d) value_shape.push_back(slot.param.size(d));
  if (slot.indices_handle < 0) {
    slot.indices_handle = AllgatherAsync(at::zeros({0, sparse_dim}, at::kLong),
                                         slot.name + ".indices", options_.process_set);
  }
  if (slot.values_handle < 0) {
    slot.values_handle = AllgatherAsync(at::zeros(value_shape, slot.param.options()),
                                        slot.name + ".values", options_.process_set);
  }
}

void GradientReducer::EnqueueBatch() {
  try {
    EnqueueSlots(batch_);
  } catch (...) {
    // Nothing of the batch was queued: each goes alone, or as a placeholder.
    if (!submit_error_) submit_error_ = std::current_exception();
    for (size_t i : batch_) {
      try {
        one_slot_.assign(1, i);
        EnqueueSlots(one_slot_);
      } catch (...) {
        try {
          EnqueuePlaceholder(i);
        } catch (...) {
          // The others wait for this name until the stall limit.
        }
      }
    }
  }
}

}  // namespace torch_ops
}  // namespace horde

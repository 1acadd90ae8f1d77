#include "torch_plugin/parameter_gather.h"

#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <utility>

#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {

ParameterGather::ParameterGather(const std::vector<ShardBucket>& buckets,
                                 const std::vector<at::Tensor>& params,
                                 std::vector<HandleId> handles)
    : buckets_(buckets), params_(params), handles_(std::move(handles)) {}

ParameterGather::~ParameterGather() {
  for (size_t b = next_; b < handles_.size(); ++b) Release(handles_[b]);
}

void ParameterGather::FinishThrough(size_t last) {
  at::NoGradGuard no_grad;
  const size_t end = std::min(last + 1, handles_.size());
  for (; next_ < end; ++next_) {
    at::Tensor gathered;
    try {
      gathered = Synchronize(handles_[next_]);
    } catch (...) {
      if (!failure_) failure_ = std::current_exception();
    }
    if (!failure_) WriteOut(next_, gathered);
  }
  if (!failure_) return;
  // Nothing is written after a failure: wait for the rest, then throw.
  for (; next_ < handles_.size(); ++next_) WaitAndDiscard(handles_[next_]);
  std::rethrow_exception(failure_);
}

void ParameterGather::WriteOut(size_t b, const at::Tensor& gathered) {
  for (const ShardBucket::Member& m : buckets_[b].members) {
    at::Tensor p = params_[m.tensor].detach();
    const at::Tensor piece = gathered.narrow(0, m.offset, m.numel);
    if (p.is_contiguous()) {
      p.view({-1}).narrow(0, m.tensor_offset, m.numel).copy_(piece);
      continue;
    }
    at::Tensor& flat = pieces_[m.tensor];
    if (!flat.defined()) flat = at::empty({p.numel()}, p.options());
    flat.narrow(0, m.tensor_offset, m.numel).copy_(piece);
    // Buckets hold a parameter's elements in order: its last piece completes it.
    if (m.tensor_offset + m.numel == p.numel()) {
      p.copy_(flat.view(p.sizes()));
      pieces_.erase(m.tensor);
    }
  }
}

}  // namespace torch_ops
}  // namespace horde

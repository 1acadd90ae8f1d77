#include "torch_plugin/counted_allreduce.h"

#include <utility>

#include "core/api.h"
#include "core/timeline.h"
#include "horde/error.h"
#include "torch_plugin/submission.h"

namespace horde {
namespace torch_ops {

CountedAllreduce::CountedAllreduce(ReduceOp op, double prescale, double postscale,
                                   int32_t process_set)
    : op_(op), prescale_(prescale), postscale_(postscale), process_set_(process_set) {}

void CountedAllreduce::Enqueue(const std::vector<at::Tensor>& tensors,
                               const std::vector<std::string>& names, const std::string& group,
                               const std::vector<size_t>& tags) {
  if (tensors.empty()) return;
  const std::shared_ptr<Runtime> runtime = RequireRuntime(process_set_, &context_);
  requests_.resize(tensors.size());
  entries_.resize(tensors.size());
  try {
    for (size_t i = 0; i < tensors.size(); ++i) {
      Request& request = requests_[i];
      request.op = OpType::kAllreduce;
      if (group.empty()) request.name = names[i];
      request.reduce_op = op_;
      request.prescale = prescale_;
      request.postscale = postscale_;
      if (views_.size() <= tags[i]) views_.resize(tags[i] + 1);
      BindTensors(tensors[i], tensors[i], &request, &entries_[i], &views_[tags[i]]);
      entries_[i].callback = Completion(done_, tags[i]);
    }
  } catch (...) {
    requests_.clear();  // nothing was queued: no entry may keep a view
    entries_.clear();
    throw;
  }
  // Counted in before the background thread can count any of them out.
  done_->Expect(tensors.size());
  Status status = group.empty() ? runtime->Enqueue(&requests_, &entries_)
                                : runtime->EnqueueGroup(group, &requests_, &entries_);
  requests_.clear();
  entries_.clear();
  if (status.ok()) return;
  for (size_t tag : tags) done_->Complete(tag, status);  // Wait() adds the context
  throw Error(InContext(status, context_));
}

Status CountedAllreduce::Wait(std::vector<size_t>* failed_tags) {
  // Every operation has completed, and completing let go of its tensors before counting
  // down (CompleteEntry; the counter's lock orders that before this): the views are ours
  // alone again.
  Status status;
  {
    const FrameworkWaitScope blocked(CurrentTimeline());
    status = InContext(done_->Wait(failed_tags), context_);
  }
  // They let go of the gradients (zero_grad(set_to_none=True) must free them) and are
  // kept for the next step.
  for (std::shared_ptr<TorchTensor>& view : views_) {
    if (view) view->Rebind(at::Tensor());
  }
  return status;
}

}  // namespace torch_ops
}  // namespace horde

#include "torch_plugin/operation.h"

#include <c10/core/GradMode.h>

#include <utility>

#include "torch_plugin/submission.h"
#include "torch_plugin/torch_tensor.h"

namespace horde {
namespace torch_ops {

Operation::Operation(size_t members, bool grouped, std::string context)
    : members_(members), grouped_(grouped), context_(std::move(context)) {}

void Operation::SetOutput(size_t member, std::shared_ptr<Tensor> output) {
  if (!abandoned_) members_.at(member).output = std::move(output);
}

void Operation::Complete(size_t member, const Status& status) {
  Member& m = members_.at(member);
  if (m.done) return;
  m.done = true;
  m.status = status;
  ++completed_;
}

void Operation::SetInPlaceTarget(size_t member, const at::Tensor& tensor, bool copy_back) {
  Member& m = members_.at(member);
  m.in_place_target = tensor;
  m.copy_back = copy_back;
}

void Operation::SetReceivedSplits(const at::Tensor& received_splits) {
  received_splits_ = received_splits;
}

void Operation::Abandon() {
  abandoned_ = true;
  for (Member& m : members_) {
    m.output.reset();
    m.in_place_target = at::Tensor();
  }
  received_splits_ = at::Tensor();
}

Status Operation::status() const {
  for (const Member& m : members_) {
    if (!m.status.ok()) return InContext(m.status, context_);
  }
  return Status::Ok();
}

OperationResult Operation::TakeResult() {
  OperationResult result;
  result.grouped = grouped_;
  result.received_splits = std::move(received_splits_);
  for (Member& m : members_) {
    const at::Tensor output = static_cast<TorchTensor*>(m.output.get())->tensor();
    if (!m.in_place_target.defined()) {
      result.outputs.push_back(output);
      continue;
    }
    if (m.copy_back) {
      // The caller's tensor may require grad: the write is the operation's, not autograd's.
      c10::NoGradGuard no_grad;
      m.in_place_target.copy_(output);
    }
    result.outputs.push_back(std::move(m.in_place_target));
  }
  members_.clear();
  return result;
}

}  // namespace torch_ops
}  // namespace horde

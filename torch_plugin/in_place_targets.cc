#include "torch_plugin/in_place_targets.h"

#include <c10/core/GradMode.h>

namespace horde {
namespace torch_ops {

InPlaceTargets& InPlaceTargets::OfProcess() {
  static InPlaceTargets* targets = new InPlaceTargets();
  return *targets;
}

at::Tensor InPlaceTargets::Work(const at::Tensor& tensor) {
  return tensor.is_contiguous() ? tensor.detach() : tensor.detach().contiguous();
}

void InPlaceTargets::Track(HandleId handle, const at::Tensor& tensor) {
  std::lock_guard<std::mutex> lock(mu_);
  targets_[handle] = Target{tensor, !tensor.is_contiguous()};  // as Work() decided
}

at::Tensor InPlaceTargets::Finish(HandleId handle, const at::Tensor& output) {
  Target target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = targets_.find(handle);
    if (it == targets_.end()) return output;
    target = std::move(it->second);
    targets_.erase(it);
  }
  if (target.copy_back) {
    // The caller's tensor may require grad: the write is the operation's, not autograd's.
    c10::NoGradGuard no_grad;
    target.tensor.copy_(output);
  }
  return target.tensor;
}

void InPlaceTargets::Forget(HandleId handle) {
  std::lock_guard<std::mutex> lock(mu_);
  targets_.erase(handle);
}

size_t InPlaceTargets::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return targets_.size();
}

}  // namespace torch_ops
}  // namespace horde

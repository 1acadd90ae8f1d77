#include "torch_plugin/accumulated_hooks.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <utility>

#include "horde/error.h"

namespace horde {
namespace torch_ops {
namespace {

class AccumulatedHook : public ::torch::autograd::FunctionPostHook {
 public:
  explicit AccumulatedHook(std::function<void()> on_accumulated)
      : on_accumulated_(std::move(on_accumulated)) {}
  ::torch::autograd::variable_list operator()(
      const ::torch::autograd::variable_list& outputs,
      const ::torch::autograd::variable_list& /*inputs*/) override {
    on_accumulated_();
    return outputs;
  }

 private:
  std::function<void()> on_accumulated_;
};

}  // namespace

AccumulatedHooks::AccumulatedHooks(const std::vector<at::Tensor>& params,
                                   const std::vector<std::string>& names, const std::string& who,
                                   std::function<void(size_t)> on_accumulated) {
  for (size_t i = 0; i < params.size(); ++i) {
    std::shared_ptr<::torch::autograd::Node> accumulator =
        ::torch::autograd::impl::grad_accumulator(params[i]);
    if (!accumulator) {
      for (size_t k = 0; k < accumulators_.size(); ++k) accumulators_[k]->del_post_hook(keys_[k]);
      throw Error(Status::InvalidArgument(
          who + ": parameter '" + names[i] +
          "' has no gradient accumulator (is it a leaf that requires grad?)"));
    }
    keys_.push_back(accumulator->add_post_hook(
        std::make_unique<AccumulatedHook>([on_accumulated, i] { on_accumulated(i); })));
    accumulators_.push_back(std::move(accumulator));
  }
}

AccumulatedHooks::~AccumulatedHooks() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(keys_[i]);
}

}  // namespace torch_ops
}  // namespace horde

// What DistributedOptimizer's gradient path allocates on the heap in the steady state,
// per gradient: a step (backward and synchronize) of 16 and of 64 parameters is measured
// with and without horde, so what every step costs regardless of the parameter count
// and what torch's own backward allocates both cancel. Without horde, each parameter's
// gradient accumulator gets a post-hook that does nothing, as horde registers one: what
// torch's engine does for any hooked node (it copies the node's inputs, one allocation)
// cancels too.
#include <gtest/gtest.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "tests/cpp/allocation_probe.h"
#include "tests/torch_cpp/test_util.h"

namespace {

using horde::torch::DistributedOptimizer;

class DoNothingHook : public ::torch::autograd::FunctionPostHook {
 public:
  ::torch::autograd::variable_list operator()(
      const ::torch::autograd::variable_list& outputs,
      const ::torch::autograd::variable_list& /*inputs*/) override {
    return outputs;
  }
};

// The fewest allocations of five steady-state steps over `count` parameters of 64 floats,
// named `prefix` and a number.
size_t StepAllocations(int count, bool with_horde, const std::string& prefix) {
  std::vector<torch::Tensor> params;
  torch::OrderedDict<std::string, torch::Tensor> named;
  for (int i = 0; i < count; ++i) {
    params.push_back(torch::ones({64}, torch::requires_grad()));
    named.insert(prefix + std::to_string(i), params.back());
  }
  torch::optim::SGD sgd(params, 0.1);
  std::unique_ptr<DistributedOptimizer> optimizer;
  std::vector<std::shared_ptr<::torch::autograd::Node>> hooked;  // kept: params hold weak refs
  if (with_horde) {
    optimizer = std::make_unique<DistributedOptimizer>(sgd, named);
  } else {
    for (const torch::Tensor& p : params) {
      hooked.push_back(::torch::autograd::impl::grad_accumulator(p));
      hooked.back()->add_post_hook(std::make_unique<DoNothingHook>());
    }
  }
  auto loss = [&] {
    torch::Tensor sum = torch::zeros({});
    for (const torch::Tensor& p : params) sum = sum + p.sum();
    return sum;
  };
  auto reduce = [&] {
    if (optimizer) optimizer->synchronize();
  };
  for (int warm_up = 0; warm_up < 5; ++warm_up) {
    loss().backward();
    reduce();
  }
  size_t fewest = std::numeric_limits<size_t>::max();
  for (int repeat = 0; repeat < 5; ++repeat) {
    torch::Tensor value = loss();  // the forward graph is built outside the count
    fewest = std::min(fewest, horde::testing::AllocationsDuring([&] {
                        value.backward();
                        reduce();
                      }));
  }
  return fewest;
}

// Per gradient: the steps of 64 parameters less those of 16, over 48, with horde less
// without it.
double AllocationsPerGradient(const std::string& prefix) {
  auto per_gradient = [&](bool with_horde) {
    return (1.0 * StepAllocations(64, with_horde, prefix) -
            StepAllocations(16, with_horde, prefix)) /
           48;
  };
  const double with = per_gradient(true);
  const double without = per_gradient(false);
  if (horde::rank() == 0) {
    std::cout << "  heap allocations per gradient and step, names like '" << prefix
              << "0': " << with - without << " by horde (torch's backward: " << without << ")\n";
  }
  return with - without;
}

TEST(DistributedOptimizer, HeapAllocationsPerGradientInTheSteadyState) {
  // Bounds a quarter above the count: an allocation made per gradient adds a whole one,
  // while a buffer that grows once because this step's rounds were larger than earlier
  // ones (scheduling decides how gradients group into rounds) adds 1/48.
  //
  // Names of up to 15 characters live inside std::string (the DistributedOptimizer's
  // "grad." plus a short parameter name): nothing is allocated per gradient.
  EXPECT_LT(AllocationsPerGradient("p"), 0.25);
  // A longer one costs a heap copy wherever a name is copied into a string that does not
  // keep one: the request, the queue's entry and a fused response's name list (up to 3;
  // docs/performance.md says why these remain).
  EXPECT_LT(AllocationsPerGradient("grad.features.denseblock."), 3.25);
}

}  // namespace

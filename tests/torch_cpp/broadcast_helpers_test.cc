// broadcast_parameters and broadcast_optimizer_state: after them, every rank holds the
// root's model and optimizer, and training steps stay identical across ranks.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/torch_cpp/test_util.h"

namespace {

using horde_test::SameOnAllRanks;
namespace ht = horde::torch;

struct NormNetImpl : torch::nn::Module {
  NormNetImpl() {
    fc = register_module("fc", torch::nn::Linear(3, 4));
    norm = register_module("norm", torch::nn::BatchNorm1d(4));
  }
  torch::Tensor forward(const torch::Tensor& x) { return torch::tanh(norm(fc(x))).sum(); }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};
TORCH_MODULE(NormNet);

// A model whose weights and batch-norm statistics depend on `seed`.
NormNet MakeNormNet(int seed) {
  torch::manual_seed(seed);
  NormNet net;
  net->forward(torch::randn({8, 3}));  // updates the running statistics
  return net;
}

bool SameState(const torch::nn::Module& a, const torch::nn::Module& b) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  auto ba = a.named_buffers(), bb = b.named_buffers();
  for (const auto& item : pa) {
    if (!item.value().equal(pb[item.key()])) return false;
  }
  for (const auto& item : ba) {
    if (!item.value().equal(bb[item.key()])) return false;
  }
  return pa.size() == pb.size() && ba.size() == bb.size();
}

TEST(BroadcastParameters, ModuleParametersAndBuffersBecomeTheRoots) {
  const int root = horde::size() - 1;
  NormNet net = MakeNormNet(100 + horde::rank());
  ht::broadcast_parameters(net, root);
  EXPECT_TRUE(SameState(*net, *MakeNormNet(100 + root)));
}

TEST(BroadcastParameters, NamedTensorsIncludingNonContiguousOnes) {
  torch::Tensor square = torch::full({3, 3}, horde::rank(), torch::kFloat);
  torch::Tensor transposed = torch::arange(6, torch::kFloat).reshape({2, 3}).t() * horde::rank();
  torch::OrderedDict<std::string, torch::Tensor> named;
  named.insert("square", square);
  named.insert("transposed", transposed);
  ht::broadcast_parameters(named, 0);
  EXPECT_TRUE(square.equal(torch::zeros({3, 3})));
  EXPECT_TRUE(transposed.equal(torch::zeros({3, 2})));
}

// One step of `optimizer` on the same data on every rank.
void Step(NormNet& net, torch::optim::Optimizer& optimizer, int seed) {
  torch::manual_seed(seed);
  optimizer.zero_grad();
  net->forward(torch::randn({8, 3})).backward();
  optimizer.step();
}

bool ParametersSameOnAllRanks(const NormNet& net) {
  for (const auto& p : net->parameters()) {
    if (!SameOnAllRanks(p)) return false;
  }
  return true;
}

TEST(BroadcastOptimizerState, AdamMomentsStepCountsAndOptionsBecomeTheRoots) {
  NormNet net = MakeNormNet(7);
  // Only the root has trained (as if it alone loaded a checkpoint), with other options.
  const double lr = horde::rank() == 0 ? 0.05 : 0.001;
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(lr));
  if (horde::rank() == 0) {
    for (int i = 0; i < 3; ++i) Step(net, adam, 10 + i);
  }
  ht::broadcast_parameters(net, 0);
  ht::broadcast_optimizer_state(adam, 0);
  EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamOptions&>(adam.param_groups()[0].options()).lr(),
                   0.05);
  // Moments and bias corrections (step counts) must agree for the steps to stay equal.
  for (int i = 0; i < 3; ++i) Step(net, adam, 20 + i);
  EXPECT_TRUE(ParametersSameOnAllRanks(net));
}

TEST(BroadcastOptimizerState, AnOptimizerThatHasNotSteppedClearsTheOthers) {
  NormNet net = MakeNormNet(8);
  torch::optim::SGD sgd(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  if (horde::rank() != 0) Step(net, sgd, 30 + horde::rank());  // stale momentum elsewhere
  ht::broadcast_parameters(net, 0);
  ht::broadcast_optimizer_state(sgd, 0);
  EXPECT_TRUE(sgd.state().empty());
  for (int i = 0; i < 2; ++i) Step(net, sgd, 40 + i);
  EXPECT_TRUE(ParametersSameOnAllRanks(net));
}

}  // namespace

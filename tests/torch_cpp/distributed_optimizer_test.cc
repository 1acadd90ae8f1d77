// horde::torch::DistributedOptimizer: training on `size` ranks with a batch each must
// match training in one process on the global batch, which every rank computes locally.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <iostream>
#include <memory>

#include "tests/torch_cpp/test_util.h"

namespace {

using horde::StatusCode;
using horde::torch::DistributedOptimizer;
using horde_test::ErrorOf;

struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(4, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Net);

using MakeOptimizer =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>;

constexpr int kSteps = 5;
constexpr int kRankBatch = 4;
constexpr double kTolerance = 1e-5;

// Trains the same initial model on `size` ranks (each on its slice of every global batch,
// in `passes` backward passes per step) and in one process on the whole batch; returns
// the largest difference between the two models' parameters.
double MaxDeviationFromSingleProcess(const MakeOptimizer& make,
                                     const horde::torch::DistributedOptimizerOptions& options) {
  const int passes = options.backward_passes_per_step;
  const int rank = horde::rank();
  const int64_t global_batch = kRankBatch * horde::size();
  torch::manual_seed(1);
  torch::Tensor x = torch::randn({kSteps, global_batch, 4});
  torch::Tensor y = torch::randn({kSteps, global_batch, 1});
  torch::manual_seed(2);
  Net distributed;
  torch::manual_seed(2);
  Net single;

  auto wrapped = make(distributed->parameters());
  DistributedOptimizer optimizer(*wrapped, distributed->named_parameters(), options);
  auto reference = make(single->parameters());
  const int64_t micro_batch = kRankBatch / passes;
  for (int step = 0; step < kSteps; ++step) {
    optimizer.zero_grad();
    for (int pass = 0; pass < passes; ++pass) {
      const int64_t begin = rank * kRankBatch + pass * micro_batch;
      torch::Tensor xs = x[step].narrow(0, begin, micro_batch);
      torch::Tensor ys = y[step].narrow(0, begin, micro_batch);
      (torch::mse_loss(distributed->forward(xs), ys) / passes).backward();
    }
    optimizer.step();

    reference->zero_grad();
    torch::mse_loss(single->forward(x[step]), y[step]).backward();
    reference->step();
  }
  double deviation = 0;
  auto mine = distributed->parameters();
  auto theirs = single->parameters();
  for (size_t i = 0; i < mine.size(); ++i) {
    deviation = std::max(deviation, (mine[i] - theirs[i]).abs().max().item<double>());
  }
  if (rank == 0) std::cout << "  max |distributed - single process| = " << deviation << "\n";
  return deviation;
}

double MaxDeviationFromSingleProcess(const MakeOptimizer& make, int passes) {
  horde::torch::DistributedOptimizerOptions options;
  options.backward_passes_per_step = passes;
  return MaxDeviationFromSingleProcess(make, options);
}

std::unique_ptr<torch::optim::Optimizer> Sgd(std::vector<torch::Tensor> params) {
  return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.1).momentum(0.9));
}

std::unique_ptr<torch::optim::Optimizer> Adam(std::vector<torch::Tensor> params) {
  return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(0.01));
}

TEST(DistributedOptimizer, SgdMatchesSingleProcessOnTheGlobalBatch) {
  EXPECT_LT(MaxDeviationFromSingleProcess(Sgd, 1), kTolerance);
}

TEST(DistributedOptimizer, AdamMatchesSingleProcessOnTheGlobalBatch) {
  EXPECT_LT(MaxDeviationFromSingleProcess(Adam, 1), kTolerance);
}

TEST(DistributedOptimizer, TwoBackwardPassesPerStepMatchSingleProcess) {
  EXPECT_LT(MaxDeviationFromSingleProcess(Sgd, 2), kTolerance);
  EXPECT_LT(MaxDeviationFromSingleProcess(Adam, 2), kTolerance);
}

TEST(DistributedOptimizer, GroupsMatchSingleProcess) {
  horde::torch::DistributedOptimizerOptions options;
  options.groups = {{"fc1.weight", "fc2.weight"}, {"fc1.bias", "fc2.bias"}};
  EXPECT_LT(MaxDeviationFromSingleProcess(Sgd, options), kTolerance);
  options.groups.clear();
  options.num_groups = 3;
  EXPECT_LT(MaxDeviationFromSingleProcess(Adam, options), kTolerance);
}

TEST(DistributedOptimizer, BucketViewsMatchSingleProcess) {
  horde::torch::DistributedOptimizerOptions options;
  options.gradient_as_bucket_view = true;
  options.bucket_cap_mb = 1e-4;  // about 100 bytes: several buckets
  options.backward_passes_per_step = 2;
  EXPECT_LT(MaxDeviationFromSingleProcess(Sgd, options), kTolerance);
}

TEST(DistributedOptimizer, Fp16CompressionStaysCloseToSingleProcess) {
  horde::torch::DistributedOptimizerOptions options;
  options.compression = horde::torch::Compression::kFp16;
  EXPECT_LT(MaxDeviationFromSingleProcess(Sgd, options), 1e-2);
}

// An embedding with sparse gradients: rank r looks up row r and row 9; the reduced
// gradient stays sparse and holds the average of every rank's.
TEST(DistributedOptimizer, SparseGradientsAreAllgatheredAndStaySparse) {
  torch::nn::Embedding embedding(torch::nn::EmbeddingOptions(10, 3).sparse(true));
  torch::optim::SGD sgd(embedding->parameters(), 0.1);
  DistributedOptimizer optimizer(sgd, embedding->named_parameters());
  const int rank = horde::rank();
  embedding->forward(torch::tensor({static_cast<int64_t>(rank), int64_t{9}})).sum().backward();
  optimizer.synchronize();
  const torch::Tensor grad = embedding->weight.grad();
  ASSERT_TRUE(grad.is_sparse());
  torch::Tensor expected = torch::zeros({10, 3});
  const double size = horde::size();
  for (int r = 0; r < horde::size(); ++r) expected[r] += 1 / size;
  expected[9] += 1;
  EXPECT_TRUE(grad.to_dense().allclose(expected)) << grad.to_dense();
  optimizer.step();
  EXPECT_TRUE(horde_test::SameOnAllRanks(embedding->weight.detach()));
}

TEST(DistributedOptimizer, InconsistentOptionsThrow) {
  Net net;
  torch::optim::SGD sgd(net->parameters(), 0.1);
  horde::torch::DistributedOptimizerOptions options;
  options.gradient_as_bucket_view = true;
  options.num_groups = 2;
  EXPECT_EQ(ErrorOf([&] { DistributedOptimizer o(sgd, net->named_parameters(), options); }).code(),
            StatusCode::kInvalidArgument);
  options = {};
  options.groups = {{"fc1.weight", "no.such.parameter"}};
  EXPECT_EQ(ErrorOf([&] { DistributedOptimizer o(sgd, net->named_parameters(), options); }).code(),
            StatusCode::kInvalidArgument);
  options = {};
  options.op = horde::Sum;
  options.gradient_predivide_factor = 2;
  EXPECT_EQ(ErrorOf([&] { DistributedOptimizer o(sgd, net->named_parameters(), options); }).code(),
            StatusCode::kInvalidArgument);
}

// A parameter that only rank 0 uses, and one that no rank uses, must not make any rank
// wait; they are reduced from .grad, or zeros.
TEST(DistributedOptimizer, ParametersUnusedOnSomeRanksAreReducedToo) {
  torch::Tensor w = torch::ones({3}, torch::requires_grad());
  torch::Tensor rank0_only = torch::zeros({2}, torch::requires_grad());
  torch::Tensor unused = torch::zeros({2}, torch::requires_grad());
  torch::optim::SGD sgd({w, rank0_only, unused}, 0.1);
  torch::OrderedDict<std::string, torch::Tensor> named;
  named.insert("w", w);
  named.insert("rank0_only", rank0_only);
  named.insert("unused", unused);
  DistributedOptimizer optimizer(sgd, named);

  torch::Tensor loss = (w * (horde::rank() + 1)).sum();
  if (horde::rank() == 0) loss = loss + 3 * rank0_only.sum();
  loss.backward();
  optimizer.synchronize();
  const double size = horde::size();
  EXPECT_TRUE(w.grad().allclose(torch::full({3}, (size + 1) / 2)));
  EXPECT_TRUE(rank0_only.grad().allclose(torch::full({2}, 3 / size)));
  EXPECT_TRUE(unused.grad().equal(torch::zeros({2})));
}

// synchronize() then step() is how gradients are clipped: step() must not reduce again.
TEST(DistributedOptimizer, StepAfterSynchronizeDoesNotReduceAgain) {
  torch::Tensor w = torch::zeros({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 1.0);
  torch::OrderedDict<std::string, torch::Tensor> named;
  named.insert("w", w);
  DistributedOptimizer optimizer(sgd, named, 1, horde::Sum);
  w.sum().backward();
  optimizer.synchronize();
  EXPECT_TRUE(w.grad().equal(torch::full({2}, horde::size(), torch::kFloat)));
  optimizer.step();
  EXPECT_TRUE(w.detach().equal(torch::full({2}, -horde::size(), torch::kFloat)));
}

TEST(DistributedOptimizer, MisuseThrowsAndLeavesItUsable) {
  torch::Tensor w = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);
  torch::OrderedDict<std::string, torch::Tensor> named;
  EXPECT_EQ(ErrorOf([&] { DistributedOptimizer unnamed(sgd, named); }).code(),
            StatusCode::kInvalidArgument);
  named.insert("w", w);
  EXPECT_EQ(ErrorOf([&] { DistributedOptimizer none(sgd, named, 0); }).code(),
            StatusCode::kInvalidArgument);

  DistributedOptimizer optimizer(sgd, named);
  w.sum().backward();
  EXPECT_EQ(ErrorOf([&] { optimizer.zero_grad(); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorOf([&] { w.sum().backward(); }).code(), StatusCode::kInvalidArgument)
      << "a second backward pass with backward_passes_per_step = 1";
  optimizer.synchronize();
  optimizer.zero_grad();
  (w * (horde::rank() + 1)).sum().backward();
  optimizer.step();
  EXPECT_TRUE(horde_test::SameOnAllRanks(w));
}

// zero_grad(set_to_none=True) frees the gradients between steps (the default in torch 2):
// nothing in horde may still hold one once the step is done.
TEST(DistributedOptimizer, ItHoldsNoGradientOnceTheStepIsDone) {
  torch::Tensor w = torch::ones({1000}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);
  torch::OrderedDict<std::string, torch::Tensor> named;
  named.insert("w", w);
  DistributedOptimizer optimizer(sgd, named);
  for (int step = 0; step < 3; ++step) {
    w.sum().backward();
    optimizer.step();
    c10::weak_intrusive_ptr<c10::TensorImpl> grad(w.grad().getIntrusivePtr());
    w.mutable_grad() = torch::Tensor();  // what zero_grad(set_to_none=True) does
    EXPECT_TRUE(grad.expired()) << "step " << step;
  }
}

TEST(DistributedOptimizer, DestroyingItRemovesTheHooks) {
  torch::Tensor w = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 0.1);
  torch::OrderedDict<std::string, torch::Tensor> named;
  named.insert("w", w);
  { DistributedOptimizer optimizer(sgd, named); }
  (w * (horde::rank() + 1)).sum().backward();
  EXPECT_TRUE(w.grad().equal(torch::full({2}, horde::rank() + 1, torch::kFloat)));
}

}  // namespace

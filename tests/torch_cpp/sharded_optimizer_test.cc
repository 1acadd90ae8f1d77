// horde::torch::ShardedOptimizer: the same trajectory as DistributedOptimizer (to 1e-6
// relative, every step), the optimizer's state a slice of the whole on each rank, and
// what sharding cannot do refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <memory>

#include "tests/torch_cpp/test_util.h"

namespace {

using horde::StatusCode;
using horde::torch::DistributedOptimizer;
using horde::torch::ShardedOptimizer;
using horde::torch::ShardedOptimizerOptions;
using horde_test::ErrorOf;

// Uneven parameter sizes: 55, 11, 33 and 3 elements.
struct ModelImpl : torch::nn::Module {
  ModelImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(5, 11));
    fc2 = register_module("fc2", torch::nn::Linear(11, 3));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::tanh(fc1(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Model);

using MakeOptimizer =
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>;

constexpr int kSteps = 100;
constexpr int64_t kGlobalBatch = 12;  // divisible by 1 to 4 ranks

Model MakeModel() {
  torch::manual_seed(1234);
  return Model();
}

// Rank r's rows of step `step`'s global batch.
std::pair<torch::Tensor, torch::Tensor> MyBatch(int step) {
  torch::manual_seed(7919 * step + 1);
  torch::Tensor x = torch::randn({kGlobalBatch, 5});
  torch::Tensor y = torch::randn({kGlobalBatch, 3});
  const int64_t rows = kGlobalBatch / horde::size();
  return {x.narrow(0, horde::rank() * rows, rows), y.narrow(0, horde::rank() * rows, rows)};
}

std::unique_ptr<torch::optim::Optimizer> SgdMomentum(std::vector<torch::Tensor> params) {
  return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(0.05).momentum(0.9));
}

std::unique_ptr<torch::optim::Optimizer> AdamDecay(std::vector<torch::Tensor> params) {
  return std::make_unique<torch::optim::Adam>(params,
                                              torch::optim::AdamOptions(0.01).weight_decay(0.01));
}

// Trains one model with DistributedOptimizer and one with ShardedOptimizer (clipping the
// gradient's norm to `clip` if positive) and expects equal parameters at every step.
void ExpectSameTrajectory(const MakeOptimizer& make, double clip, int stage) {
  Model reference_model = MakeModel();
  Model model = MakeModel();
  auto reference_inner = make(reference_model->parameters());
  DistributedOptimizer reference(*reference_inner, reference_model->named_parameters());
  auto inner = make(model->parameters());
  ShardedOptimizerOptions options;
  options.stage = stage;
  options.bucket_cap_mb = 64.0 / (1 << 20);  // 16 floats: parameters span buckets and ranks
  ShardedOptimizer sharded(*inner, model->named_parameters(), options);
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = MyBatch(step);
    reference.zero_grad();
    torch::mse_loss(reference_model->forward(x), y).backward();
    reference.synchronize();
    double reference_norm = 0;
    if (clip > 0) {
      reference_norm = torch::nn::utils::clip_grad_norm_(reference_model->parameters(), clip);
    }
    reference.step();

    sharded.zero_grad();
    torch::mse_loss(model->forward(x), y).backward();
    if (clip > 0) {
      EXPECT_NEAR(sharded.clip_grad_norm(clip), reference_norm, 1e-5 * reference_norm);
    }
    sharded.step();

    auto mine = model->parameters();
    auto theirs = reference_model->parameters();
    for (size_t i = 0; i < mine.size(); ++i) {
      ASSERT_TRUE(torch::allclose(mine[i], theirs[i], 1e-6, 1e-7))
          << "step " << step << ", parameter " << i << ": "
          << (mine[i] - theirs[i]).abs().max().item<double>();
      EXPECT_EQ(mine[i].grad().defined(), stage == 1);
    }
  }
}

TEST(ShardedOptimizer, SgdWithMomentumFollowsDistributedOptimizer) {
  for (int stage : {1, 2}) ExpectSameTrajectory(SgdMomentum, 0, stage);
}

TEST(ShardedOptimizer, AdamWithDecayAndClippingFollowsDistributedOptimizer) {
  for (int stage : {1, 2}) ExpectSameTrajectory(AdamDecay, 0.5, stage);
}

// Buckets and slices from 2 MiB on live in huge pages (torch_plugin/huge_page_tensor.h):
// a 6 MiB layer, one bucket, the same steps as DistributedOptimizer's in both stages (with
// SGD: Adam's first steps divide by gradients that 1.5 M elements put near zero, where
// the ranks' sums in another order differ).
TEST(ShardedOptimizer, LargeBucketsFollowDistributedOptimizer) {
  for (int stage : {1, 2}) {
    torch::manual_seed(99);
    torch::nn::Linear reference_model(1024, 1536), model(1024, 1536);
    {
      torch::NoGradGuard copy;
      for (size_t i = 0; i < model->parameters().size(); ++i) {
        model->parameters()[i].copy_(reference_model->parameters()[i]);
      }
    }
    auto reference_inner = SgdMomentum(reference_model->parameters());
    DistributedOptimizer reference(*reference_inner, reference_model->named_parameters());
    auto inner = SgdMomentum(model->parameters());
    ShardedOptimizerOptions options;
    options.stage = stage;
    ShardedOptimizer sharded(*inner, model->named_parameters(), options);
    for (int step = 0; step < 3; ++step) {
      torch::manual_seed(step + horde::rank() * 100);
      const torch::Tensor x = torch::randn({4, 1024});
      reference.zero_grad();
      reference_model->forward(x).square().mean().backward();
      reference.step();
      sharded.zero_grad();
      model->forward(x).square().mean().backward();
      sharded.step();
      for (size_t i = 0; i < model->parameters().size(); ++i) {
        ASSERT_TRUE(
            torch::allclose(model->parameters()[i], reference_model->parameters()[i], 1e-6, 1e-7))
            << "stage " << stage << ", step " << step << ", parameter " << i << ": "
            << (model->parameters()[i] - reference_model->parameters()[i])
                   .abs()
                   .max()
                   .item<double>();
      }
    }
  }
}

TEST(ShardedOptimizer, EachRankKeepsASliceOfTheState) {
  Model model = MakeModel();
  auto inner = AdamDecay(model->parameters());
  ShardedOptimizer sharded(*inner, model->named_parameters());
  auto [x, y] = MyBatch(0);
  torch::mse_loss(model->forward(x), y).backward();
  sharded.step();
  int64_t total = 0, held = 0;
  for (const auto& p : model->parameters()) total += p.numel();
  for (const auto& group : inner->param_groups()) {
    for (const auto& p : group.params()) held += p.numel();
  }
  // One bucket, padded by less than one element a rank.
  EXPECT_LE(held, total / horde::size() + 1);
  EXPECT_EQ(inner->state().size(), inner->param_groups()[0].params().size());
}

TEST(ShardedOptimizer, LbfgsAndASteppedOptimizerAreRefused) {
  Model model = MakeModel();
  torch::optim::LBFGS lbfgs(model->parameters());
  horde::Status status = ErrorOf(
      [&] { ShardedOptimizer refused(lbfgs, model->named_parameters()); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("LBFGS needs whole parameters"), std::string::npos);
  auto adam = AdamDecay(model->parameters());
  auto [x, y] = MyBatch(0);
  torch::mse_loss(model->forward(x), y).backward();
  adam->step();
  status = ErrorOf([&] { ShardedOptimizer refused(*adam, model->named_parameters()); });
  EXPECT_NE(status.message().find("before its first step"), std::string::npos);
}

}  // namespace

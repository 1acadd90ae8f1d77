// horde::torch::ShardedOptimizer: the same trajectory as DistributedOptimizer (to 1e-6
// relative, every step), the optimizer's state a slice of the whole on each rank, whole
// state dicts that reshard onto another layout and fewer ranks, and what sharding cannot
// do refused.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

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

// Rank `rank`'s rows of step `step`'s global batch, split over `ranks` ranks.
std::pair<torch::Tensor, torch::Tensor> MyBatch(int step, int rank = horde::rank(),
                                                int ranks = horde::size()) {
  torch::manual_seed(7919 * step + 1);
  torch::Tensor x = torch::randn({kGlobalBatch, 5});
  torch::Tensor y = torch::randn({kGlobalBatch, 3});
  const int64_t rows = kGlobalBatch / ranks;
  return {x.narrow(0, rank * rows, rows), y.narrow(0, rank * rows, rows)};
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

// Rank 0's `bytes` on every rank.
std::string FromRankZero(const std::string& bytes, const std::string& name) {
  torch::Tensor length = torch::full({1}, static_cast<int64_t>(bytes.size()), torch::kLong);
  horde::torch::broadcast_(length, 0, name + ".length");
  torch::Tensor data = torch::empty({length.item<int64_t>()}, torch::kByte);
  if (horde::rank() == 0) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  horde::torch::broadcast_(data, 0, name + ".bytes");
  return std::string(static_cast<const char*>(data.data_ptr()), data.numel());
}

Model CopyOf(Model& model) {
  Model copy = MakeModel();
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < copy->parameters().size(); ++i) {
    copy->parameters()[i].copy_(model->parameters()[i]);
  }
  return copy;
}

void ExpectSameParameters(Model& a, Model& b, const std::string& what) {
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    EXPECT_TRUE(torch::allclose(a->parameters()[i], b->parameters()[i], 1e-5, 1e-7))
        << what << ", parameter " << i << ": "
        << (a->parameters()[i] - b->parameters()[i]).abs().max().item<double>();
  }
}

// Three steps of Adam, sharded in buckets of 16 floats on every rank; the whole state
// consolidated on rank 0 and saved with torch::save, then loaded by a plain Adam (stepping
// on the whole batch alone), by a sharded optimizer with one bucket on every rank, and by
// one on all ranks but the last (one rank of two): each takes the same next step as the
// unsharded optimizer that made all four.
TEST(ShardedOptimizer, AWholeStateDictReshardsOntoAnotherLayoutAndFewerRanks) {
  Model reference_model = MakeModel();
  Model model = MakeModel();
  auto reference_inner = AdamDecay(reference_model->parameters());
  DistributedOptimizer reference(*reference_inner, reference_model->named_parameters());
  auto inner = AdamDecay(model->parameters());
  ShardedOptimizerOptions small_buckets;
  small_buckets.bucket_cap_mb = 64.0 / (1 << 20);
  ShardedOptimizer sharded(*inner, model->named_parameters(), small_buckets);
  for (int step = 0; step < 3; ++step) {
    auto [x, y] = MyBatch(step);
    reference.zero_grad();
    torch::mse_loss(reference_model->forward(x), y).backward();
    reference.step();
    sharded.zero_grad();
    torch::mse_loss(model->forward(x), y).backward();
    sharded.step();
  }
  Model holder = MakeModel();
  auto whole = AdamDecay(holder->parameters());
  sharded.consolidate_state_dict(*whole, 0);
  std::ostringstream saved;
  if (horde::rank() == 0) torch::save(*whole, saved);
  const std::string checkpoint = FromRankZero(saved.str(), "checkpoint");
  auto load = [&](ShardedOptimizer& target) {
    Model loaded_holder = MakeModel();
    auto loaded = AdamDecay(loaded_holder->parameters());
    std::istringstream in(checkpoint);
    torch::load(*loaded, in);
    target.load_state_dict(*loaded);
  };
  Model plain_model = CopyOf(model);
  auto plain = AdamDecay(plain_model->parameters());
  std::istringstream in(checkpoint);
  torch::load(*plain, in);

  Model one_bucket_model = CopyOf(model);
  auto one_bucket_inner = AdamDecay(one_bucket_model->parameters());
  ShardedOptimizer one_bucket(*one_bucket_inner, one_bucket_model->named_parameters());
  load(one_bucket);
  const int fewer = horde::size() - 1;
  std::vector<int> ranks;
  for (int r = 0; r < fewer; ++r) ranks.push_back(r);
  horde::ProcessSet set = horde::add_process_set(ranks);
  Model fewer_model = CopyOf(model);
  if (set.included()) {
    auto fewer_inner = AdamDecay(fewer_model->parameters());
    ShardedOptimizerOptions on_set;
    on_set.process_set = set;
    ShardedOptimizer on_fewer(*fewer_inner, fewer_model->named_parameters(), on_set);
    load(on_fewer);
    auto [x, y] = MyBatch(3, set.rank(), fewer);
    torch::mse_loss(fewer_model->forward(x), y).backward();
    on_fewer.step();
  }
  auto [x, y] = MyBatch(3);
  reference.zero_grad();
  torch::mse_loss(reference_model->forward(x), y).backward();
  reference.step();
  torch::mse_loss(one_bucket_model->forward(x), y).backward();
  one_bucket.step();
  ExpectSameParameters(one_bucket_model, reference_model, "one bucket");
  auto [all_x, all_y] = MyBatch(3, 0, 1);
  torch::mse_loss(plain_model->forward(all_x), all_y).backward();
  plain->step();
  ExpectSameParameters(plain_model, reference_model, "a plain Adam");
  if (set.included()) {
    ExpectSameParameters(fewer_model, reference_model, std::to_string(fewer) + " ranks");
  }
  horde::remove_process_set(set);
}

TEST(ShardedOptimizer, AWholeOptimizerOverOtherParametersIsRefused) {
  Model model = MakeModel();
  auto inner = AdamDecay(model->parameters());
  ShardedOptimizer sharded(*inner, model->named_parameters());
  auto fc1_only = AdamDecay(model->fc1->parameters());
  horde::Status status = ErrorOf([&] { sharded.load_state_dict(*fc1_only); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("the whole optimizer has 2 parameters, this one 4"),
            std::string::npos)
      << status.message();
  Model other = MakeModel();
  std::vector<torch::Tensor> swapped = other->parameters();
  std::swap(swapped[0], swapped[1]);
  auto wrong_order = AdamDecay(swapped);
  status = ErrorOf([&] { sharded.consolidate_state_dict(*wrong_order, 0); });
  EXPECT_NE(status.message().find("parameter 0 of the whole optimizer (group 0, shape [11])"),
            std::string::npos)
      << status.message();
  status = ErrorOf([&] { sharded.consolidate_state_dict(*wrong_order, horde::size()); });
  EXPECT_NE(status.message().find("is not in process set"), std::string::npos);
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

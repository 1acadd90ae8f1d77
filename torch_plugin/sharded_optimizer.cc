#include "horde/torch/sharded_optimizer.h"

#include <torch/optim/lbfgs.h>

#include <algorithm>
#include <utility>

#include "horde/basics.h"
#include "horde/error.h"
#include "torch_plugin/parameter_shards.h"
#include "torch_plugin/sharded_state.h"
#include "torch_plugin/trainable_parameters.h"

namespace horde {
namespace torch {
namespace {

Error InvalidArgument(const std::string& message) {
  return Error(Status::InvalidArgument("ShardedOptimizer: " + message));
}

void DropOrZero(at::Tensor& tensor, bool set_to_none) {
  if (!tensor.grad().defined()) return;
  if (set_to_none) {
    tensor.mutable_grad().reset();
  } else {
    tensor.mutable_grad().detach_();
    tensor.mutable_grad().zero_();
  }
}

}  // namespace

ShardedOptimizer::ShardedOptimizer(::torch::optim::Optimizer& optimizer,
                                   const NamedParameters& named_parameters,
                                   const ShardedOptimizerOptions& options)
    : optimizer_(optimizer), process_set_(options.process_set) {
  if (!is_initialized()) {
    throw InvalidArgument("horde has not been initialized; call horde::init() first");
  }
  if (dynamic_cast<::torch::optim::LBFGS*>(&optimizer) != nullptr) {
    throw InvalidArgument(
        "LBFGS needs whole parameters and gradients for its line search and history; use "
        "DistributedOptimizer");
  }
  if (!optimizer.state().empty()) {
    throw InvalidArgument(
        "wrap the optimizer before its first step: its state is kept per "
        "whole parameter, the sharded one per slice");
  }
  if (options.bucket_cap_mb <= 0) {
    throw InvalidArgument("bucket_cap_mb must be positive, got " +
                          std::to_string(options.bucket_cap_mb));
  }
  const ProcessSet& set = options.process_set;
  if (!set.included()) {
    throw InvalidArgument("rank " + std::to_string(rank()) + " is not in process set " +
                          std::to_string(set.id()));
  }
  std::vector<std::string> names;
  torch_ops::TrainableParameters(optimizer, named_parameters, "ShardedOptimizer", &params_, &names,
                                 &groups_);
  if (params_.empty()) throw InvalidArgument("the optimizer has no trainable parameters");
  torch_ops::ParameterShardsOptions shard_options;
  shard_options.stage = options.stage;
  shard_options.backward_passes_per_step = options.backward_passes_per_step;
  shard_options.op = options.op;
  shard_options.process_set = set.id();
  shard_options.bucket_cap_bytes = std::max<int64_t>(
      1, static_cast<int64_t>(options.bucket_cap_mb * (1 << 20)));
  shard_options.fp16 = options.compression == Compression::kFp16;
  shard_options.name = "sharded." + names[0];
  shards_ = std::make_unique<torch_ops::ParameterShards>(params_, groups_, names, shard_options);
  // From now on the optimizer steps the slices, each group its buckets'.
  for (auto& group : optimizer.param_groups()) group.params().clear();
  for (size_t b = 0; b < shards_->shards().size(); ++b) {
    optimizer.param_groups()[shards_->group_of(b)].params().push_back(shards_->shards()[b]);
  }
}

ShardedOptimizer::~ShardedOptimizer() = default;

void ShardedOptimizer::synchronize() {
  if (reduced_) return;
  shards_->ReduceGradients();
  reduced_ = true;
}

double ShardedOptimizer::clip_grad_norm(double max_norm, double norm_type) {
  synchronize();
  return shards_->ClipGradNorm(max_norm, norm_type);
}

void ShardedOptimizer::step() {
  synchronize();
  optimizer_.step();
  reduced_ = false;
  shards_->GatherParameters();
}

void ShardedOptimizer::zero_grad(bool set_to_none) {
  if (!reduced_ && shards_->HasPendingWork()) {
    throw InvalidArgument(
        "zero_grad() was called after backward() and before step() or synchronize(); the "
        "gradients are already being reduced");
  }
  for (at::Tensor& param : params_) DropOrZero(param, set_to_none);
  for (at::Tensor shard : shards_->shards()) DropOrZero(shard, true);
  reduced_ = false;
}

void ShardedOptimizer::consolidate_state_dict(::torch::optim::Optimizer& whole, int root_rank) {
  const std::vector<int> ranks = process_set_.ranks();
  if (std::find(ranks.begin(), ranks.end(), root_rank) == ranks.end()) {
    throw InvalidArgument("root_rank " + std::to_string(root_rank) + " is not in process set " +
                          std::to_string(process_set_.id()));
  }
  torch_ops::GatherWholeState(*shards_, optimizer_, params_, groups_, whole, rank() == root_rank);
}

void ShardedOptimizer::load_state_dict(const ::torch::optim::Optimizer& whole) {
  torch_ops::ShardWholeState(*shards_, whole, params_, groups_, optimizer_);
  reduced_ = false;
}

}  // namespace torch
}  // namespace horde

#include "horde/torch/distributed_optimizer.h"

#include <unordered_map>
#include <utility>

#include "core/process_set_registry.h"
#include "horde/basics.h"
#include "horde/error.h"
#include "torch_plugin/gradient_reducer.h"
#include "torch_plugin/trainable_parameters.h"

namespace horde {
namespace torch {
namespace {

Error InvalidArgument(const std::string& message) {
  return Error(Status::InvalidArgument("DistributedOptimizer: " + message));
}

// Groups given by parameter name, as indices into the trainable parameters.
std::vector<std::vector<size_t>> GroupIndices(const std::vector<std::vector<std::string>>& groups,
                                              const std::vector<std::string>& names) {
  std::unordered_map<std::string, size_t> index_of;
  for (size_t i = 0; i < names.size(); ++i) index_of.emplace(names[i], i);
  std::vector<std::vector<size_t>> indices;
  for (const std::vector<std::string>& group : groups) {
    indices.emplace_back();
    for (const std::string& name : group) {
      auto it = index_of.find(name);
      if (it == index_of.end()) {
        throw InvalidArgument("group member '" + name +
                              "' is not a trainable parameter of the optimizer");
      }
      indices.back().push_back(it->second);
    }
  }
  return indices;
}

}  // namespace

DistributedOptimizer::DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                                           const NamedParameters& named_parameters,
                                           int backward_passes_per_step, ReduceOp op,
                                           ProcessSet process_set)
    : DistributedOptimizer(optimizer, named_parameters, [&] {
        DistributedOptimizerOptions options;
        options.backward_passes_per_step = backward_passes_per_step;
        options.op = op;
        options.process_set = std::move(process_set);
        return options;
      }()) {}

DistributedOptimizer::DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                                           const NamedParameters& named_parameters,
                                           const DistributedOptimizerOptions& options)
    : optimizer_(optimizer) {
  // Failing here beats failing in the middle of backward.
  if (!is_initialized()) {
    throw InvalidArgument("horde has not been initialized; call horde::init() first");
  }
  const ProcessSet& set = options.process_set;
  if (!set.included()) {
    throw InvalidArgument("rank " + std::to_string(rank()) + " is not in process set " +
                          std::to_string(set.id()) + " (ranks " + RanksString(set.ranks()) + ")");
  }
  if (options.gradient_as_bucket_view && options.bucket_cap_mb <= 0) {
    throw InvalidArgument("bucket_cap_mb must be positive, got " +
                          std::to_string(options.bucket_cap_mb));
  }
  std::vector<at::Tensor> params;
  std::vector<std::string> names;
  std::vector<int> groups;
  torch_ops::TrainableParameters(optimizer, named_parameters, "DistributedOptimizer", &params,
                                 &names, &groups);
  torch_ops::GradientReducerOptions reducer;
  reducer.op = options.op;
  reducer.gradient_predivide_factor = options.gradient_predivide_factor;
  reducer.backward_passes_per_step = options.backward_passes_per_step;
  reducer.process_set = set.id();
  reducer.groups = GroupIndices(options.groups, names);
  reducer.num_groups = options.num_groups;
  reducer.sparse_as_dense = options.sparse_as_dense;
  for (std::string& name : names) name = "grad." + name;
  if (options.gradient_as_bucket_view) {
    reducer.bucket_cap_bytes = static_cast<int64_t>(options.bucket_cap_mb * (1 << 20));
  }
  if (options.compression == Compression::kFp16) {
    reducer.compressor = std::make_shared<torch_ops::Fp16Compressor>();
  }
  reducer_ = std::make_unique<torch_ops::GradientReducer>(std::move(params), std::move(names),
                                                          std::move(reducer));
}

DistributedOptimizer::~DistributedOptimizer() = default;

void DistributedOptimizer::synchronize() {
  synchronized_ = false;
  reducer_->Synchronize();
  synchronized_ = true;
}

void DistributedOptimizer::step() {
  // Every rank reduces at every step unless it synchronized since its last backward
  // pass: a rank that had no data must not leave the others waiting.
  if (!synchronized_ || reducer_->BackwardSeen()) synchronize();
  synchronized_ = false;
  optimizer_.step();
}

void DistributedOptimizer::zero_grad() {
  if (reducer_->HasPendingWork()) {
    throw InvalidArgument(
        "zero_grad() was called after backward() and before step() or synchronize(), "
        "which would discard gradients being reduced");
  }
  if (!reducer_->ZeroBuckets()) optimizer_.zero_grad();
}

}  // namespace torch
}  // namespace horde

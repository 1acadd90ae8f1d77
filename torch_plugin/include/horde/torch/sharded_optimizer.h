#pragma once

#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "horde/data_type.h"
#include "horde/process_set.h"
#include "horde/torch/distributed_optimizer.h"

namespace horde {

namespace torch_ops {
class ParameterShards;
}  // namespace torch_ops

namespace torch {

struct ShardedOptimizerOptions {
  // 1: the optimizer state is sharded; 2: the gradients too (each parameter's whole
  // gradient is dropped once copied into its bucket; between steps a rank keeps its
  // slice and the buffers of the buckets in flight).
  int stage = 2;
  // Local backward passes (gradients accumulate in .grad) per step.
  int backward_passes_per_step = 1;
  ReduceOp op = ReduceOp::kAverage;  // or kSum
  ProcessSet process_set = ProcessSet();
  Compression compression = Compression::kNone;
  double bucket_cap_mb = 25;
};

// The optimizer state sharded across ranks (ZeRO stages 1 and 2), as Python's
// hvd.ShardedOptimizer, on the same implementation (torch_plugin/parameter_shards.h): the
// trainable parameters are laid out in flat buckets, each rank owns an equal slice of
// every bucket, and the wrapped optimizer's parameter groups are rewritten to hold this
// rank's slices (flat tensors), so its state is 1/N of the whole. step() reduce-scatters
// the gradients into the slices, steps the wrapped optimizer and allgathers the slices
// back into the parameters: the bytes of one allreduce. For optimizers that update each
// element on its own (SGD, Adam, AdamW, RMSprop, Adagrad); not LBFGS.
//
// The parameters are the truth between steps: step() first copies them into the slices,
// so a broadcast or a loaded checkpoint made after construction is taken.
class ShardedOptimizer {
 public:
  using NamedParameters = ::torch::OrderedDict<std::string, at::Tensor>;

  // `optimizer` (which must outlive this) steps the slices from now on. Collective over
  // the process set. Throws horde::Error (kInvalidArgument) for LBFGS, bad options, or a
  // rank outside the process set.
  ShardedOptimizer(::torch::optim::Optimizer& optimizer, const NamedParameters& named_parameters,
                   const ShardedOptimizerOptions& options = {});
  ~ShardedOptimizer();
  ShardedOptimizer(const ShardedOptimizer&) = delete;
  ShardedOptimizer& operator=(const ShardedOptimizer&) = delete;

  // Reduce-scatters this step's gradients into the slices (once per step; step() calls
  // it if no one did). Throws for a sparse gradient.
  void synchronize();
  // The norm of the whole reduced gradient, and scales it to max_norm when larger, as
  // torch::nn::utils::clip_grad_norm_ over the whole would.
  double clip_grad_norm(double max_norm, double norm_type = 2.0);
  void step();
  // Drops (or zeros, with set_to_none false) the parameters' and the slices' gradients.
  void zero_grad(bool set_to_none = true);

  // Checkpoints in a plain optimizer's terms. `whole` is an optimizer of the wrapped one's
  // type over the whole trainable parameters (the same shapes, order and groups: e.g. a
  // torch::optim::Adam made over model->parameters()).
  // consolidate_state_dict: collective over the process set; every rank passes a `whole`,
  // and on `root_rank` (a job rank in the set) its state and its groups' options are
  // replaced by the whole state: torch::save(whole, path) then writes a checkpoint that a
  // plain optimizer, or load_state_dict on any number of ranks, takes.
  void consolidate_state_dict(::torch::optim::Optimizer& whole, int root_rank = 0);
  // Local: this rank's slices of `whole`'s state (e.g. loaded with torch::load from a
  // checkpoint made on another number of ranks), and its groups' options.
  void load_state_dict(const ::torch::optim::Optimizer& whole);

  ::torch::optim::Optimizer& optimizer() { return optimizer_; }

 private:
  ::torch::optim::Optimizer& optimizer_;
  std::vector<at::Tensor> params_;  // the trainable parameters, in the optimizer's order
  std::vector<int> groups_;         // params_[i]'s parameter group
  ProcessSet process_set_;
  std::unique_ptr<torch_ops::ParameterShards> shards_;
  bool reduced_ = false;  // since the last step()
};

}  // namespace torch
}  // namespace horde

#pragma once

#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include <memory>
#include <string>
#include <vector>

#include "horde/data_type.h"
#include "horde/process_set.h"

namespace horde {

namespace torch_ops {
class GradientReducer;
}  // namespace torch_ops

namespace torch {

// How gradients travel: as they are, or floating-point ones as float16 (Horovod's
// Compression.none and Compression.fp16).
enum class Compression { kNone, kFp16 };

// DistributedOptimizer's options beyond the optimizer and the parameter names, with
// Horovod's names and defaults.
struct DistributedOptimizerOptions {
  // Local backward passes (gradients accumulate in .grad) per reduction.
  int backward_passes_per_step = 1;
  ReduceOp op = ReduceOp::kAverage;
  ProcessSet process_set = ProcessSet();
  Compression compression = Compression::kNone;
  // With Average: divide by this before the sum and by size()/factor after it.
  double gradient_predivide_factor = 1.0;
  // Parameters reduced as one unit each (negotiated and fused together), by name...
  std::vector<std::vector<std::string>> groups;
  // ...or, without `groups`, this many contiguous, nearly equal slices of them.
  int num_groups = 0;
  // Reduce sparse gradients as dense tensors instead of allgathering indices and values.
  bool sparse_as_dense = false;
  // Lay gradients out as views into flat buckets of up to bucket_cap_mb MiB, each
  // reduced in place by one allreduce (as DistributedDataParallel does); zero_grad() then
  // zeros the buckets. Not with compression or groups.
  bool gradient_as_bucket_view = false;
  double bucket_cap_mb = 25;
};

// Wraps a torch::optim::Optimizer so that it steps with gradients reduced over all ranks
// of `process_set` (default: every rank of the job), averaged by default. A hook on each
// parameter's gradient accumulator starts the reduction of its gradient as soon as
// backward has produced it, overlapping communication with the rest of backward; step()
// waits for them, writes the results into param.grad() and steps the wrapped optimizer.
// With backward_passes_per_step = k, gradients accumulate locally over k backward passes
// and are reduced once, on the k-th. Python's hvd.DistributedOptimizer runs on the same
// implementation.
//
// A parameter whose gradient did not appear on this rank (unused in this step) has its
// .grad reduced at step() (zeros if it has none), so that no rank waits for it; like
// Horovod, it then has a defined gradient on every rank. Sparse gradients (e.g. of an
// embedding with sparse=true) are allgathered and stay sparse.
//
// Neither copyable nor movable: the hooks refer to it. Destroying it removes them.
class DistributedOptimizer {
 public:
  using NamedParameters = ::torch::OrderedDict<std::string, at::Tensor>;

  // `named_parameters` (e.g. module->named_parameters()) names every parameter of
  // `optimizer` the same way on all ranks; the names match gradients across ranks.
  // Throws horde::Error (kInvalidArgument) on a rank outside `process_set`, or for bad
  // options.
  DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                       const NamedParameters& named_parameters,
                       const DistributedOptimizerOptions& options);
  DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                       const NamedParameters& named_parameters, int backward_passes_per_step = 1,
                       ReduceOp op = ReduceOp::kAverage, ProcessSet process_set = ProcessSet());
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Waits for every gradient's reduction (starting those no hook started) and writes the
  // results into param.grad(). Call it to read or clip the reduced gradients before
  // step(), which then does not reduce them again. Collective: every rank calls it. If a
  // reduction fails it still waits for the others, then throws the first error; the next
  // backward pass starts a fresh step either way.
  void synchronize();
  // synchronize() unless done since the last backward pass, then the wrapped step().
  void step();
  // The wrapped optimizer's zero_grad() (with bucket views: zeros the buckets). Throws
  // horde::Error if called after reductions started and before step() (or
  // synchronize()), which would race with them.
  void zero_grad();

  ::torch::optim::Optimizer& optimizer() { return optimizer_; }

 private:
  ::torch::optim::Optimizer& optimizer_;
  std::unique_ptr<torch_ops::GradientReducer> reducer_;
  bool synchronized_ = false;  // since the last step()
};

}  // namespace torch
}  // namespace horde

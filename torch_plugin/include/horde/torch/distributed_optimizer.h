#pragma once

#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include <mutex>
#include <string>
#include <vector>

#include "horde/data_type.h"
#include "horde/process_set.h"
#include "horde/torch/handle.h"

namespace horde {
namespace torch {

struct AllreduceOptions;

// Wraps a torch::optim::Optimizer so that it steps with gradients reduced over all ranks
// of `process_set` (default: every rank of the job), averaged by default. A hook on each
// parameter starts the allreduce of its gradient as soon as backward has produced it,
// overlapping communication with the rest of backward; step() waits for them, writes
// the results into param.grad() and steps the wrapped optimizer. With backward_passes_per_step = k,
// gradients accumulate locally over k backward passes and are reduced once, on the k-th.
//
// A parameter whose gradient did not appear on this rank (unused in this step) has its
// .grad reduced at step() (zeros if it has none), so that no rank waits for it; like
// Horovod, it then has a defined gradient on every rank.
//
// Neither copyable nor movable: the hooks refer to it. Destroying it removes them.
class DistributedOptimizer {
 public:
  using NamedParameters = ::torch::OrderedDict<std::string, at::Tensor>;

  // `named_parameters` (e.g. module->named_parameters()) names every parameter of
  // `optimizer` the same way on all ranks; the names match gradients across ranks.
  // Throws horde::Error (kInvalidArgument) on a rank outside `process_set`.
  DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                       const NamedParameters& named_parameters, int backward_passes_per_step = 1,
                       ReduceOp op = ReduceOp::kAverage, ProcessSet process_set = ProcessSet());
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Waits for every gradient's reduction (starting those no hook started) and writes the
  // results into param.grad(). Call it to read or clip the reduced gradients before
  // step(), which then does not reduce them again. Collective: every rank calls it.
  void synchronize();
  // synchronize() unless done since the last backward pass, then the wrapped step().
  void step();
  // The wrapped optimizer's zero_grad(). Throws horde::Error if called between backward
  // and step() (or synchronize()), which would lose gradients being reduced.
  void zero_grad();

  ::torch::optim::Optimizer& optimizer() { return optimizer_; }

 private:
  struct Slot {
    at::Tensor param;
    std::string name;  // of its allreduce, the same on every rank
    unsigned hook = 0;
    int passes = 0;    // backward passes that produced its gradient since the last step
    Handle reduction;  // in flight since the hook started it
  };

  void AddSlots(const NamedParameters& named_parameters);
  void OnGradient(Slot& slot, const at::Tensor& grad);
  void StartMissingReductions();
  AllreduceOptions Options(const Slot& slot) const;  // of the slot's allreduce

  ::torch::optim::Optimizer& optimizer_;
  const int backward_passes_per_step_;
  const ReduceOp op_;
  const ProcessSet process_set_;
  std::mutex mu_;  // hooks may run on autograd's device threads
  std::vector<Slot> slots_;
  bool synchronized_ = false;
};

}  // namespace torch
}  // namespace horde

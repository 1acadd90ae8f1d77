#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

#include <cstdint>
#include <string>
#include <vector>

#include "torch_plugin/counted_allreduce.h"

namespace horde {
namespace torch_ops {

// How the ranks agree that an optimizer step failed somewhere. A rank that could not
// prepare or write back one of its gradients (a compressor that raised, memory that ran
// out on that rank alone) would otherwise skip the update while the others applied
// theirs, and the parameters would differ from then on. At the end of every step each
// rank contributes its world rank if its step failed; one Min allreduce, named after the
// optimizer so it stays in the response cache, gives every rank the lowest failed rank.
// Allocates nothing per step.
class StepOutcome {
 public:
  // `name`: the same on every rank, unique to the optimizer.
  StepOutcome(std::string name, int32_t process_set);

  // Collective over the process set: the world rank of the lowest rank whose step
  // failed (`failed_here` on that rank), or -1 when none did. Throws horde::Error when
  // the agreement itself fails.
  int LowestFailedRank(bool failed_here);

 private:
  CountedAllreduce allreduce_;
  at::Tensor flag_ = at::zeros({1}, at::kInt);
  std::vector<at::Tensor> tensors_{flag_};
  std::vector<std::string> names_;
  std::vector<size_t> tags_{0};
  const int32_t process_set_;
  std::string context_;
};

}  // namespace torch_ops
}  // namespace horde

#include "torch_plugin/step_outcome.h"

#include <limits>
#include <utility>

#include "horde/error.h"
#include "torch_plugin/submission.h"

namespace horde {
namespace torch_ops {

namespace {

int WorldRank(const Topology& topology) {
  return topology.world_ranks.empty() ? topology.rank : topology.world_ranks[topology.rank];
}

}  // namespace

StepOutcome::StepOutcome(std::string name, int32_t process_set)
    : allreduce_(ReduceOp::kMin, 1.0, 1.0, process_set),
      names_{std::move(name)},
      process_set_(process_set) {}

int StepOutcome::LowestFailedRank(bool failed_here) {
  const Topology& topology = RequireRuntime(process_set_, &context_)->topology();
  if (topology.size == 1) return failed_here ? WorldRank(topology) : -1;
  constexpr int32_t kNone = std::numeric_limits<int32_t>::max();
  flag_.data_ptr<int32_t>()[0] = failed_here ? WorldRank(topology) : kNone;
  try {
    allreduce_.Enqueue(tensors_, names_, "", tags_);
  } catch (...) {
    allreduce_.Wait(nullptr);  // collects the failure it counted, or a later step reads it
    throw;
  }
  ThrowIfError(allreduce_.Wait(nullptr));
  const int32_t lowest = flag_.data_ptr<int32_t>()[0];
  return lowest == kNone ? -1 : lowest;
}

}  // namespace torch_ops
}  // namespace horde

#pragma once

#include <memory>

#include "core/collective_op.h"
#include "core/timeline.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/tree_pipeline.h"
#include "topology/topology_plan.h"

namespace horde {
namespace mpi {

// Broadcast of host tensors down the job's planned spanning trees, re-rooted at the
// response's root (mpi_ops/tree_pipeline.h), when the plan predicts every tensor of the
// response faster there than on MPI's binomial tree; otherwise MpiBroadcast runs it.
class MpiTreeBroadcast : public CollectiveOp {
 public:
  MpiTreeBroadcast(std::shared_ptr<MpiContext> context, std::shared_ptr<Timeline> timeline,
                   std::shared_ptr<const TopologyPlan> plan)
      : context_(std::move(context)),
        timeline_(std::move(timeline)),
        plan_(std::move(plan)),
        pipeline_(context_->world(), context_->topology().rank, plan_->links().latency_seconds()) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 private:
  std::shared_ptr<MpiContext> context_;
  std::shared_ptr<Timeline> timeline_;
  std::shared_ptr<const TopologyPlan> plan_;
  TreePipeline pipeline_;
};

}  // namespace mpi
}  // namespace horde

#pragma once

#include <memory>

#include "core/collective_op.h"
#include "core/timeline.h"
#include "mpi_ops/fusion_buffer.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/mpi_datatypes.h"
#include "mpi_ops/tree_pipeline.h"
#include "topology/topology_plan.h"

namespace horde {
namespace mpi {

// Allreduce of host tensors over the spanning trees of the job's topology plan
// (mpi_ops/tree_pipeline.h), for the responses the plan predicts faster on the trees than
// on MPI's own allreduce by its margin: large tensors and fused buffers. The others, and
// Adasum, decline to the ops registered after it.
class MpiTreeAllreduce : public CollectiveOp {
 public:
  MpiTreeAllreduce(std::shared_ptr<MpiContext> context, std::shared_ptr<MpiDatatypes> types,
                   std::shared_ptr<Timeline> timeline, std::shared_ptr<FusionBuffer> fusion_buffer,
                   std::shared_ptr<const TopologyPlan> plan)
      : MpiTreeAllreduce(context->world(), context, std::move(types), std::move(timeline),
                         std::move(fusion_buffer), std::move(plan)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 protected:
  // The trees span the ranks of `comm`, one of `context`'s communicators.
  MpiTreeAllreduce(MPI_Comm comm, std::shared_ptr<MpiContext> context,
                   std::shared_ptr<MpiDatatypes> types, std::shared_ptr<Timeline> timeline,
                   std::shared_ptr<FusionBuffer> fusion_buffer,
                   std::shared_ptr<const TopologyPlan> plan)
      : context_(std::move(context)),
        types_(std::move(types)),
        timeline_(std::move(timeline)),
        fusion_buffer_(std::move(fusion_buffer)),
        plan_(std::move(plan)),
        pipeline_(comm, CommRank(comm), plan_->links().latency_seconds()) {}

  // Combines `count` elements at `data` over every rank (no scaling): here, over the trees.
  virtual Status Combine(char* data, int64_t count, const Response& response);
  // Combines them over the trees of the plan, among the ranks of the pipeline's comm.
  Status CombineOverTrees(char* data, int64_t count, const Response& response);

  const std::shared_ptr<MpiContext>& context() const { return context_; }
  const MpiDatatypes& types() const { return *types_; }
  Timeline& timeline() const { return *timeline_; }
  const TopologyPlan& plan() const { return *plan_; }

 private:
  static int CommRank(MPI_Comm comm);
  // Prescales, combines and postscales `count` elements at `data`.
  Status Reduce(char* data, int64_t count, const Response& response);

  std::shared_ptr<MpiContext> context_;
  std::shared_ptr<MpiDatatypes> types_;
  std::shared_ptr<Timeline> timeline_;
  std::shared_ptr<FusionBuffer> fusion_buffer_;
  std::shared_ptr<const TopologyPlan> plan_;
  TreePipeline pipeline_;
  FusionCopier copier_;
};

}  // namespace mpi
}  // namespace horde

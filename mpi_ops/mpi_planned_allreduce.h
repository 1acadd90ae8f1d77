#pragma once

#include <memory>

#include "core/collective_op.h"
#include "core/timeline.h"
#include "mpi_ops/fusion_buffer.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/mpi_datatypes.h"
#include "mpi_ops/ring_allreduce.h"
#include "mpi_ops/tree_pipeline.h"
#include "topology/topology_plan.h"

namespace horde {
namespace mpi {

// Allreduce of host tensors as the job's topology plan says for their size: over its
// spanning trees (mpi_ops/tree_pipeline.h) or on a ring in rank order
// (mpi_ops/ring_allreduce.h), for the responses the plan predicts faster there than on
// MPI's own allreduce: large tensors and fused buffers. The others, and Adasum, decline to
// the ops registered after it.
class MpiPlannedAllreduce : public CollectiveOp {
 public:
  MpiPlannedAllreduce(std::shared_ptr<MpiContext> context, std::shared_ptr<MpiDatatypes> types,
                      std::shared_ptr<Timeline> timeline,
                      std::shared_ptr<FusionBuffer> fusion_buffer,
                      std::shared_ptr<const TopologyPlan> plan)
      : MpiPlannedAllreduce(context->world(), context, std::move(types), std::move(timeline),
                            std::move(fusion_buffer), std::move(plan)) {}

  bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const override;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override;

 protected:
  // The trees span the ranks of `comm`, one of `context`'s communicators.
  MpiPlannedAllreduce(MPI_Comm comm, std::shared_ptr<MpiContext> context,
                      std::shared_ptr<MpiDatatypes> types, std::shared_ptr<Timeline> timeline,
                      std::shared_ptr<FusionBuffer> fusion_buffer,
                      std::shared_ptr<const TopologyPlan> plan)
      : context_(std::move(context)),
        types_(std::move(types)),
        timeline_(std::move(timeline)),
        fusion_buffer_(std::move(fusion_buffer)),
        plan_(std::move(plan)),
        comm_(comm),
        pipeline_(comm, CommRank(comm), plan_->links().latency_seconds()),
        ring_(comm, CommRank(comm), CommSize(comm)) {}

  // Combines `count` elements at `data` over every rank (no scaling): here, as planned.
  virtual Status Combine(char* data, int64_t count, const Response& response);
  // Combines them among the ranks of the plan's communicator, as the plan says for their
  // size: over the trees, on the ring in rank order, or with MPI's allreduce.
  Status CombineAsPlanned(char* data, int64_t count, const Response& response);

  const std::shared_ptr<MpiContext>& context() const { return context_; }
  const MpiDatatypes& types() const { return *types_; }
  Timeline& timeline() const { return *timeline_; }
  const TopologyPlan& plan() const { return *plan_; }

 private:
  static int CommRank(MPI_Comm comm);
  static int CommSize(MPI_Comm comm);
  // Prescales, combines and postscales `count` elements at `data`.
  Status Reduce(char* data, int64_t count, const Response& response);

  std::shared_ptr<MpiContext> context_;
  std::shared_ptr<MpiDatatypes> types_;
  std::shared_ptr<Timeline> timeline_;
  std::shared_ptr<FusionBuffer> fusion_buffer_;
  std::shared_ptr<const TopologyPlan> plan_;
  MPI_Comm comm_;
  TreePipeline pipeline_;
  RingAllreduce ring_;
  FusionCopier copier_;
};

}  // namespace mpi
}  // namespace horde

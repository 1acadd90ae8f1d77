#include "mpi_ops/plan_race.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "mpi_ops/ring_allreduce.h"
#include "mpi_ops/tree_pipeline.h"

namespace horde {
namespace mpi {
namespace {

constexpr int kTimedRuns = 2;  // after one warm-up

// The best of kTimedRuns of `run`, each timed on the slowest rank of the world.
Status Time(MPI_Comm world, const std::function<Status()>& run, double* best) {
  *best = std::numeric_limits<double>::infinity();
  for (int i = 0; i <= kTimedRuns; ++i) {
    HORDE_RETURN_IF_ERROR(CheckMpi(MPI_Barrier(world), "MPI_Barrier"));
    const double start = MPI_Wtime();
    HORDE_RETURN_IF_ERROR(run());
    double elapsed = MPI_Wtime() - start;
    HORDE_RETURN_IF_ERROR(CheckMpi(
        MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, world), "MPI_Allreduce"));
    if (i > 0) *best = std::min(*best, elapsed);
  }
  return Status::Ok();
}

}  // namespace

Status RaceTreesAgainstRing(const MpiContext& context, const TopologyPlan& plan, int64_t bytes,
                            RaceResult* result) {
  *result = RaceResult();
  const Topology& topology = context.topology();
  const int64_t per_rank = bytes / topology.local_size;
  if (plan.AllreduceFor(per_rank, 4) != TopologyPlan::Allreduce::kTrees) return Status::Ok();
  const MPI_Comm comm = topology.local_size == 1 ? context.world() : context.cross();
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int64_t count = per_rank / 4;
  std::vector<float> data(static_cast<size_t>(count), 1.0f);
  char* buffer = reinterpret_cast<char*>(data.data());
  TreePipeline trees(comm, rank, plan.links().latency_seconds());
  RingAllreduce ring(comm, rank, size);
  HORDE_RETURN_IF_ERROR(Time(
      context.world(),
      [&] { return trees.Allreduce(plan.trees(), buffer, count, 4, MPI_FLOAT, MPI_SUM); },
      &result->trees_seconds));
  // On two ranks the ring is MPI's one exchange, which the plan leaves to MPI.
  HORDE_RETURN_IF_ERROR(Time(
      context.world(),
      [&] {
        if (size > 2) return ring.Run(buffer, count, 4, MPI_FLOAT, MPI_SUM);
        return CheckMpi(
            MPI_Allreduce(MPI_IN_PLACE, buffer, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm),
            "MPI_Allreduce");
      },
      &result->ring_seconds));
  result->raced = true;
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde

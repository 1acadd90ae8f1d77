#include "mpi_ops/job_topology.h"

#include <chrono>
#include <limits>
#include <string>

#include "core/logging.h"
#include "mpi_ops/host_name.h"
#include "mpi_ops/link_probe.h"
#include "mpi_ops/mpi_transport.h"
#include "mpi_ops/plan_race.h"
#include "topology/shared_link_file.h"

namespace horde {
namespace mpi {
namespace {

// Whether `auto` measures: several hosts, each with the same number of ranks. Every rank
// decides the same: the counts come from the world's node communicators.
bool ShouldMeasure(const Topology& topology, std::string* why_not) {
  if (topology.cross_size < 2) return false;
  if (topology.homogeneous) return true;
  *why_not =
      "trees are planned between hosts that run as many ranks each; this job's hosts "
      "run different numbers, so collectives stay on MPI";
  return false;
}

// With several ranks a host, the hosts' first ranks measure the links between the hosts
// and hand the matrix to the other ranks of their host. An empty matrix (nothing planned)
// when the ranks were placed so that the hosts' k-th ranks list the hosts in different
// orders.
Status MeasureHosts(const MpiContext& context, LinkMatrix* links) {
  const Topology& topology = context.topology();
  if (topology.local_size == 1) return LinkProbe(context.world()).Measure(links);
  Status measured;
  std::string text;
  if (topology.local_rank == 0) {
    measured = LinkProbe(context.cross()).Measure(links);
    if (measured.ok()) text = links->Format();
  }
  // The text's length (-1: the measurement failed, and the host's other ranks fail with
  // it), and the leader's rank among the hosts: each local rank's cross communicator must
  // list the hosts in the leaders' order, or its trees would join the wrong hosts.
  int64_t header[2] = {measured.ok() ? static_cast<int64_t>(text.size()) : -1, topology.cross_rank};
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Bcast(header, 2, MPI_INT64_T, 0, context.local()), "MPI_Bcast"));
  int same_order = header[1] == topology.cross_rank ? 1 : 0;
  HORDE_RETURN_IF_ERROR(
      CheckMpi(MPI_Allreduce(MPI_IN_PLACE, &same_order, 1, MPI_INT, MPI_MIN, context.world()),
               "MPI_Allreduce"));
  if (!measured.ok()) return measured;
  const int64_t length = header[0];
  if (length < 0) {
    return Status::Internal("topology: the first rank of this host could not measure the links");
  }
  text.resize(static_cast<size_t>(length));
  HORDE_RETURN_IF_ERROR(CheckMpi(
      MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, context.local()), "MPI_Bcast"));
  if (!same_order) {
    *links = LinkMatrix();
    return Status::Ok();
  }
  return LinkMatrix::Parse(text, links);
}

// A file's rows are hosts when they are fewer than the ranks; the hierarchical allreduce runs
// them over MPI's grouping of ranks by shared memory, so the two must agree.
Status CheckHostsAgree(const Topology& topology, const LinkMatrix& links) {
  if (links.size() == topology.size || links.size() == topology.cross_size) return Status::Ok();
  return Status::InvalidArgument(
      "HORDE_TOPOLOGY: the host names put this job's ranks on " + std::to_string(links.size()) +
      " hosts, MPI's shared-memory grouping on " + std::to_string(topology.cross_size) +
      " (every host needs its own host name)");
}

// A measured plan's allreduce trees are raced against the ring (mpi_ops/plan_race.h) and
// dropped when they lose: what the probe cannot see (racks behind uplinks as fast as one
// flow) the race does. The race runs at the smallest size from 2 MiB where the plan takes
// the trees (large enough that both run at their rate); a plan that takes them only
// beyond 64 MiB is not raced. A matrix file is the user's word and is not second-guessed.
Status KeepTreesThatWin(const MpiContext& context, bool log,
                        std::shared_ptr<const TopologyPlan>* plan) {
  const int64_t per_host = context.topology().local_size;
  int64_t bytes = 2 << 20;
  while (bytes <= (64 << 20) && !(*plan)->TreesForAllreduce(bytes / per_host, 4)) bytes *= 2;
  if (bytes > (64 << 20)) return Status::Ok();
  RaceResult race;
  HORDE_RETURN_IF_ERROR(RaceTreesAgainstRing(context, **plan, bytes, &race));
  if (log) {
    HORDE_LOG(kInfo) << "topology: a " << (bytes >> 20) << " MiB allreduce took "
                     << race.trees_seconds * 1e3 << " ms on the trees, " << race.ring_seconds * 1e3
                     << " ms on the ring: "
                     << (race.trees_won() ? "trees kept" : "allreduce takes the ring instead");
  }
  if (race.trees_won()) return Status::Ok();
  TopologyPlanOptions no_allreduce_trees;
  no_allreduce_trees.allreduce_margin = std::numeric_limits<double>::infinity();
  *plan = std::make_shared<const TopologyPlan>((*plan)->links(), no_allreduce_trees);
  return Status::Ok();
}

}  // namespace

Status PlanJobTopology(const Config& config, const std::shared_ptr<MpiContext>& context,
                       std::shared_ptr<const TopologyPlan>* plan) {
  plan->reset();
  const Topology& topology = context->topology();
  const bool log = topology.rank == 0;
  LinkMatrix links;
  if (config.topology == "off") return Status::Ok();
  if (config.topology == "auto") {
    std::string why_not;
    if (!ShouldMeasure(topology, &why_not)) {
      if (log && !why_not.empty()) HORDE_LOG(kInfo) << "topology: " << why_not;
      return Status::Ok();
    }
    const auto start = std::chrono::steady_clock::now();
    HORDE_RETURN_IF_ERROR(MeasureHosts(*context, &links));
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    if (log) {
      HORDE_LOG(kInfo) << "topology: measured the links between " << topology.cross_size
                       << " hosts in " << spent.count() << " s (HORDE_TOPOLOGY=off skips it):\n"
                       << links.Format();
    }
  } else {
    MpiTransport transport(context);
    HORDE_RETURN_IF_ERROR(ReadSharedLinkFile(&transport, config.topology, HostName(), &links));
    HORDE_RETURN_IF_ERROR(CheckHostsAgree(topology, links));
  }
  auto planned = std::make_shared<const TopologyPlan>(std::move(links));
  if (config.topology == "auto") {
    HORDE_RETURN_IF_ERROR(KeepTreesThatWin(*context, log, &planned));
  }
  if (log) HORDE_LOG(kInfo) << "topology:\n" << planned->Describe();
  *plan = std::move(planned);
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde

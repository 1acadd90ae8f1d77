#include "mpi_ops/job_topology.h"

#include <chrono>
#include <string>

#include "core/logging.h"
#include "core/shared_link_file.h"
#include "mpi_ops/host_name.h"
#include "mpi_ops/link_probe.h"
#include "mpi_ops/mpi_transport.h"

namespace horde {
namespace mpi {
namespace {

// Whether `auto` measures: several hosts, each with one rank. Every rank decides the
// same: the counts come from the world's node communicators.
bool ShouldMeasure(const Topology& topology, std::string* why_not) {
  if (topology.cross_size < 2) return false;
  if (topology.local_size == 1 && topology.homogeneous) return true;
  *why_not = "trees are planned between hosts that run one rank each; this job runs " +
             std::to_string(topology.local_size) + " on some host, so collectives stay on MPI";
  return false;
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
    HORDE_RETURN_IF_ERROR(LinkProbe(*context).Measure(&links));
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    if (log) {
      HORDE_LOG(kInfo) << "topology: measured the links between " << topology.size << " hosts in "
                       << spent.count() << " s (HORDE_TOPOLOGY=off skips it)";
    }
  } else {
    MpiTransport transport(context);
    HORDE_RETURN_IF_ERROR(ReadSharedLinkFile(&transport, config.topology, HostName(), &links));
  }
  auto planned = std::make_shared<const TopologyPlan>(std::move(links));
  if (log) HORDE_LOG(kInfo) << "topology:\n" << planned->Describe();
  *plan = std::move(planned);
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde

#include "mpi_ops/job_topology.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "core/logging.h"
#include "core/rank_agreement.h"
#include "mpi_ops/link_probe.h"
#include "mpi_ops/mpi_transport.h"

namespace horde {
namespace mpi {
namespace {

Status ReadLinkFile(const std::string& path, int size, LinkMatrix* links) {
  std::ifstream file(path);
  if (!file) {
    return Status::InvalidArgument("HORDE_TOPOLOGY: cannot read the link matrix file '" + path +
                                   "' (expected auto, off, or a file written by horderun "
                                   "--probe-topology)");
  }
  std::stringstream text;
  text << file.rdbuf();
  const Status parsed = LinkMatrix::Parse(text.str(), links);
  if (!parsed.ok()) {
    return Status::InvalidArgument("HORDE_TOPOLOGY: '" + path + "': " + parsed.message());
  }
  if (links->size() != size) {
    return Status::InvalidArgument("HORDE_TOPOLOGY: '" + path + "' has links for " +
                                   std::to_string(links->size()) + " ranks; this job has " +
                                   std::to_string(size));
  }
  return Status::Ok();
}

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
    HORDE_RETURN_IF_ERROR(AgreeAllSucceeded(
        &transport, ReadLinkFile(config.topology, topology.size, &links), "topology planning"));
  }
  auto planned = std::make_shared<const TopologyPlan>(std::move(links));
  if (log) HORDE_LOG(kInfo) << "topology:\n" << planned->Describe();
  *plan = std::move(planned);
  return Status::Ok();
}

}  // namespace mpi
}  // namespace horde

#pragma once

#include <memory>

#include "core/config.h"
#include "mpi_ops/mpi_context.h"
#include "topology/topology_plan.h"

namespace horde {
namespace mpi {

// The links of the job and the spanning trees planned over them, as HORDE_TOPOLOGY says:
//   off   no plan: every collective stays on MPI;
//   auto  for a job of more than one host with as many ranks on each, the links between
//         the hosts are measured (mpi_ops/link_probe.h; with several ranks a host, by
//         each host's first rank): a plan with one row per host; a one-host job has
//         nothing to plan;
//   FILE  the link matrix in FILE (topology/link_matrix.h), one row per rank.
// Collective over `context`, and the same on every rank: a rank that cannot read its file
// fails init on every rank, naming it. *plan stays null when nothing is planned.
Status PlanJobTopology(const Config& config, const std::shared_ptr<MpiContext>& context,
                       std::shared_ptr<const TopologyPlan>* plan);

}  // namespace mpi
}  // namespace horde

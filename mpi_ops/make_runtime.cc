#include "mpi_ops/make_runtime.h"

#include <utility>

#include "core/logging.h"
#include "core/shared_config.h"
#include "mpi_ops/job_topology.h"
#include "mpi_ops/mpi_adasum_allreduce.h"
#include "mpi_ops/mpi_allgather.h"
#include "mpi_ops/mpi_allreduce.h"
#include "mpi_ops/mpi_alltoall.h"
#include "mpi_ops/mpi_barrier.h"
#include "mpi_ops/mpi_broadcast.h"
#include "mpi_ops/mpi_hierarchical_allreduce.h"
#include "mpi_ops/mpi_planned_allreduce.h"
#include "mpi_ops/mpi_reducescatter.h"
#include "mpi_ops/mpi_transport.h"
#include "mpi_ops/mpi_tree_broadcast.h"

namespace horde {
namespace mpi {

namespace {

// `plan`, when it has trees, adds the tree ops in front of MPI's allreduce and broadcast
// (with several ranks a host, the plan spans the hosts: the hierarchical allreduce only).
Status RuntimeOver(const Config& config, const std::shared_ptr<MpiContext>& context,
                   const DeviceOps& device, const std::shared_ptr<const TopologyPlan>& plan,
                   std::unique_ptr<Runtime>* runtime) {
  auto types = std::make_shared<MpiDatatypes>();
  auto ops = std::make_unique<OpRegistry>();
  auto timeline = std::make_shared<Timeline>();
  auto fusion_buffer = std::make_shared<FusionBuffer>(context);
  // Registered first: the device ops are tried before the host ones (and decline host
  // tensors).
  if (device.register_ops) device.register_ops(config, ops.get(), context, types, timeline);
  // Adasum is no MPI reduction op: its own algorithm, tried before the plain allreduce.
  ops->Register(OpType::kAllreduce, std::make_unique<MpiAdasumAllreduce>(context, timeline));
  if (plan && !plan->trees().empty() && plan->links().size() != context->topology().size) {
    // The plan spans the hosts, not the ranks (auto, several ranks a host): allreduce
    // reduces within each host around it.
    ops->Register(OpType::kAllreduce, std::make_unique<MpiHierarchicalAllreduce>(
                                          context, types, timeline, fusion_buffer, plan));
  } else if (plan && !plan->trees().empty()) {
    ops->Register(OpType::kAllreduce, std::make_unique<MpiPlannedAllreduce>(
                                          context, types, timeline, fusion_buffer, plan));
    ops->Register(OpType::kBroadcast, std::make_unique<MpiTreeBroadcast>(context, timeline, plan));
  }
  ops->Register(OpType::kAllreduce,
                std::make_unique<MpiAllreduce>(context, types, timeline, fusion_buffer));
  ops->Register(OpType::kAllgather, std::make_unique<MpiAllgather>(context));
  ops->Register(OpType::kBroadcast, std::make_unique<MpiBroadcast>(context));
  ops->Register(OpType::kAlltoall, std::make_unique<MpiAlltoall>(context));
  ops->Register(OpType::kReducescatter, std::make_unique<MpiReducescatter>(context, types));
  ops->Register(OpType::kBarrier, std::make_unique<MpiBarrier>(context));
  HORDE_RETURN_IF_ERROR(ops->CheckEveryOpImplemented());
  *runtime = std::make_unique<Runtime>(config, context->topology(),
                                       std::make_unique<MpiTransport>(context), std::move(ops),
                                       timeline);
  return Status::Ok();
}

}  // namespace

Status MakeRuntime(const Status& parsed, const Config& config, const DeviceOps& device,
                   std::unique_ptr<Runtime>* runtime) {
  std::shared_ptr<MpiContext> context;
  HORDE_RETURN_IF_ERROR(MpiContext::Create(&context));
  SetLogRank(context->topology().rank);  // the agreement's warnings name the rank
  Config agreed = config;
  MpiTransport transport(context);
  const BuildIdentity build = BuildIdentity::Current(device.library);
  HORDE_RETURN_IF_ERROR(AgreeOnConfig(&transport, build, parsed, &agreed));
  std::shared_ptr<const TopologyPlan> plan;
  HORDE_RETURN_IF_ERROR(PlanJobTopology(agreed, context, &plan));
  return RuntimeOver(agreed, context, device, plan, runtime);
}

Status MakeProcessSetRuntime(const Config& config, const std::vector<int>& ranks,
                             const DeviceOps& device, std::unique_ptr<Runtime>* runtime) {
  std::shared_ptr<MpiContext> context;
  HORDE_RETURN_IF_ERROR(MpiContext::CreateForRanks(ranks, &context));
  runtime->reset();
  if (!context) return Status::Ok();
  // A process set's collectives stay on MPI: the plan is for the world's ranks.
  return RuntimeOver(config, context, device, nullptr, runtime);
}

RuntimeFactory RuntimeFactoryWith(DeviceOps device) {
  return [device = std::move(device)](const Status& parsed, const Config& config,
                                      std::unique_ptr<Runtime>* runtime) {
    return MakeRuntime(parsed, config, device, runtime);
  };
}

ProcessSetFactory ProcessSetFactoryWith(DeviceOps device) {
  return [device = std::move(device)](const Config& config, const std::vector<int>& ranks,
                                      std::unique_ptr<Runtime>* runtime) {
    return MakeProcessSetRuntime(config, ranks, device, runtime);
  };
}

bool MpiThreadsSupported() {
  bool multiple = false;
  return EnsureMpiInitialized(&multiple).ok() && multiple;
}

}  // namespace mpi
}  // namespace horde

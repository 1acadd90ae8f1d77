#include "mpi_ops/make_runtime.h"

#include <utility>

#include "core/logging.h"
#include "core/shared_config.h"
#include "mpi_ops/mpi_adasum_allreduce.h"
#include "mpi_ops/mpi_allgather.h"
#include "mpi_ops/mpi_allreduce.h"
#include "mpi_ops/mpi_alltoall.h"
#include "mpi_ops/mpi_barrier.h"
#include "mpi_ops/mpi_broadcast.h"
#include "mpi_ops/mpi_reducescatter.h"
#include "mpi_ops/mpi_transport.h"

namespace horde {
namespace mpi {

namespace {

Status RuntimeOver(const Config& config, const std::shared_ptr<MpiContext>& context,
                   const DeviceOps& device, std::unique_ptr<Runtime>* runtime) {
  auto types = std::make_shared<MpiDatatypes>();
  auto ops = std::make_unique<OpRegistry>();
  auto timeline = std::make_shared<Timeline>();
  // Registered first: the device ops are tried before the host ones (and decline host
  // tensors).
  if (device.register_ops) device.register_ops(config, ops.get(), context, types, timeline);
  // Adasum is no MPI reduction op: its own algorithm, tried before the plain allreduce.
  ops->Register(OpType::kAllreduce, std::make_unique<MpiAdasumAllreduce>(context, timeline));
  ops->Register(OpType::kAllreduce, std::make_unique<MpiAllreduce>(context, types, timeline));
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
  return RuntimeOver(agreed, context, device, runtime);
}

Status MakeProcessSetRuntime(const Config& config, const std::vector<int>& ranks,
                             const DeviceOps& device, std::unique_ptr<Runtime>* runtime) {
  std::shared_ptr<MpiContext> context;
  HORDE_RETURN_IF_ERROR(MpiContext::CreateForRanks(ranks, &context));
  runtime->reset();
  if (!context) return Status::Ok();
  return RuntimeOver(config, context, device, runtime);
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

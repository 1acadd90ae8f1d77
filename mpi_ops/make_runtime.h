#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/config.h"
#include "core/op_registry.h"
#include "core/runtime.h"
#include "core/timeline.h"
#include "mpi_ops/mpi_context.h"
#include "mpi_ops/mpi_datatypes.h"

namespace horde {
namespace mpi {

// Collectives for tensors in device memory that a layer above this one adds to every
// runtime (gpu_ops/: CUDA and NCCL), passed in by whoever builds the runtime. The
// default adds none.
struct DeviceOps {
  // The device library in the build identity that all ranks must share ("NCCL 22703":
  // NCCL of another version cannot join the same communicator), "none" without one.
  std::string library = "none";
  // Registers the implementations for the settings the ranks agreed on. Called before
  // the host implementations are registered, so they are tried first (and decline host
  // tensors). Unset registers none.
  std::function<void(
      const Config& config, OpRegistry* ops, const std::shared_ptr<MpiContext>& context,
      const std::shared_ptr<MpiDatatypes>& types, const std::shared_ptr<Timeline>& timeline)>
      register_ops;
};

// Builds a runtime over MPI: the communicators, the negotiation transport and the MPI
// collectives for host tensors, after `device`'s, with the settings the ranks agree on
// (see core/shared_config.h; `parsed` says whether this rank's environment parsed).
Status MakeRuntime(const Status& parsed, const Config& config, const DeviceOps& device,
                   std::unique_ptr<Runtime>* runtime);
// The same over the process set of these (sorted) world ranks (see core/api.h's
// ProcessSetFactory); null on the ranks outside it. Needs MPI_THREAD_MULTIPLE.
Status MakeProcessSetRuntime(const Config& config, const std::vector<int>& ranks,
                             const DeviceOps& device, std::unique_ptr<Runtime>* runtime);

// The two above as core/api.h's factories (for InitRuntime, AddProcessSet), with `device`.
RuntimeFactory RuntimeFactoryWith(DeviceOps device);
ProcessSetFactory ProcessSetFactoryWith(DeviceOps device);

// Whether the MPI library provides MPI_THREAD_MULTIPLE (initializing MPI if needed).
bool MpiThreadsSupported();

}  // namespace mpi
}  // namespace horde

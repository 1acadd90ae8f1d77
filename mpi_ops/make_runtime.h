#pragma once

#include <memory>
#include <vector>

#include "core/config.h"
#include "core/runtime.h"

namespace horde {
namespace mpi {

// Builds a runtime over MPI: the communicators, the negotiation transport and the MPI
// collectives for host tensors, with the settings the ranks agree on (see
// core/shared_config.h; `parsed` says whether this rank's environment parsed).
Status MakeRuntime(const Status& parsed, const Config& config, std::unique_ptr<Runtime>* runtime);
// The same over the process set of these (sorted) world ranks (see core/api.h's
// ProcessSetFactory); null on the ranks outside it. Needs MPI_THREAD_MULTIPLE.
Status MakeProcessSetRuntime(const Config& config, const std::vector<int>& ranks,
                             std::unique_ptr<Runtime>* runtime);

// Whether the MPI library provides MPI_THREAD_MULTIPLE (initializing MPI if needed).
bool MpiThreadsSupported();

}  // namespace mpi
}  // namespace horde

#pragma once

#include <memory>

#include "core/config.h"
#include "core/runtime.h"

namespace horde {
namespace mpi {

// Builds a runtime over MPI: the communicators, the negotiation transport and the MPI
// collectives for host tensors.
Status MakeRuntime(const Config& config, std::unique_ptr<Runtime>* runtime);

// Whether the MPI library provides MPI_THREAD_MULTIPLE (initializing MPI if needed).
bool MpiThreadsSupported();

}  // namespace mpi
}  // namespace horde

#pragma once

#include "launcher/job_spec.h"
#include "launcher/mpi_command.h"

namespace horde::launcher {

// Hydra's mpirun (MPICH and its kin): -hosts host:slots, -bind-to none, -genvlist and
// -genv for the environment, -iface for --network-interface, and the ssh options in
// HYDRA_LAUNCHER_EXTRA_ARGS, which Hydra appends to its ssh command. A fault-tolerant job
// (elastic in place) is a UsageError: horderun drives only Open MPI 5's ULFM.
MpiCommand BuildHydraCommand(const JobSpec& job);

}  // namespace horde::launcher

#pragma once

#include "launcher/job_spec.h"
#include "launcher/mpi_command.h"

namespace horde::launcher {

// Open MPI's mpirun: -H host:slots, --map-by slot (fill each host in turn) and
// --bind-to none (training processes start their own threads); -x for the environment;
// plm_rsh_args for the ssh options; tcp_if_include for --network-interface.
MpiCommand BuildOpenMpiCommand(const JobSpec& job);

}  // namespace horde::launcher

#pragma once

#include "launcher/job_spec.h"
#include "launcher/mpi_command.h"

namespace horde::launcher {

// Open MPI's mpirun: -H host:slots, --map-by slot (fill each host in turn) and
// --bind-to none (training processes start their own threads); -x for the environment;
// the ssh options and --network-interface as MCA parameters.
//
// Open MPI up to 4.x (ORTE) and from 5.0 (PRRTE) differ in what they call these; with
// `prrte` the command uses 5.0's names instead of those it deprecates:
//   ORTE (4.x)                            PRRTE (5.x)
//   --map-by slot --oversubscribe         --map-by slot:OVERSUBSCRIBE
//   --tag-output                          --output tag
//   --output-filename DIR                 --output dir=DIR,merge-stderr-to-stdout
//   --mca plm_rsh_args ARGS               --prtemca plm_ssh_args ARGS
//   --mca oob_tcp_if_include IF           --prtemca oob_tcp_if_include IF
// (--output dir= merges stderr because PMIx 5.0.7, Debian 13's, fails to open a rank's
// second output file: with both stdout and stderr files, stderr is lost.)
// A fault-tolerant job (elastic in place) gets --with-ft ulfm, which only PRRTE has; with
// ORTE it is a UsageError.
MpiCommand BuildOpenMpiCommand(const JobSpec& job, bool prrte);

}  // namespace horde::launcher

#pragma once

#include "launcher/environment.h"
#include "launcher/job_spec.h"
#include "launcher/launcher_options.h"
#include "launcher/mpi_flavor.h"

namespace horde::launcher {

// Runs an elastic job (--host-discovery-script) as a sequence of mpirun jobs, called
// generations. Open MPI 4.1 cannot shrink a communicator after a process died, so a
// failed rank ends its generation; horderun then starts the next one on the hosts that
// are left, and the new ranks resume from the newest commit() (kept by each rank on
// tmpfs in the job directory, $HORDE_ELASTIC_DIR; python/horde/common/elastic). With
// Open MPI 5's ULFM the job runs in place instead (elastic_mode.h, decided once here): a
// failed rank does not end the generation, whose survivors go on.
//
// The decisions are ElasticPolicy's (elastic_policy.h); this wires it to the real
// discovery script, ssh checks, mpirun and signals (elastic_loop.h). The job directory
// (job_directory.h) reaches the ranks through mpirun's environment, as does the newest
// commit a rank announced (HORDE_ELASTIC_EXPECT_COMMIT). However the job ends (an
// exception included), the directory is removed here and, over ssh, on every other host
// that ran ranks, with those of dead horderuns found here at the start. Returns the exit
// code: 0 when a generation finished, non-zero after a one-line reason otherwise.
int RunElasticJob(const LauncherOptions& options, const Environment& env,
                  const LocalMachine& machine, const MpiInstall& mpi);

}  // namespace horde::launcher

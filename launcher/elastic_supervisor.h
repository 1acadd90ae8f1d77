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
// tmpfs in the job directory, $HORDE_ELASTIC_DIR; python/horde/common/elastic).
//
// Each generation runs min(usable slots, --max-np) ranks, once at least --min-np are
// usable (waiting up to --elastic-timeout). A host change seen by the discovery script
// (run every second) makes every rank's next commit() raise HostsUpdatedInterrupt, the
// ranks exit, and the next generation starts on the new hosts. A remote host is checked
// over ssh before it first takes ranks, and again when it comes back after a failure
// (--blacklist-cooldown-range; see HostPool). Every reset prints one line with its
// reason; after --reset-limit resets horderun gives up. However the job ends, the job
// directory is removed here and, over ssh, on every other host that ran ranks. Returns
// the exit code: 0 when a generation finished, non-zero after a one-line reason otherwise.
int RunElasticJob(const LauncherOptions& options, const Environment& env,
                  const LocalMachine& machine, const MpiInstall& mpi);

}  // namespace horde::launcher

#pragma once

#include <string>

#include "launcher/mpi_command.h"

namespace horde::launcher {

// Runs mpirun (at `program`) in a process group of its own, with the launcher
// variables added to horderun's environment, and waits for it. SIGINT, SIGTERM and
// SIGHUP that reach horderun are passed to that group; if it is still running 10 s
// after one, the group is killed. Returns mpirun's exit code, or 128 + N when signal N
// made horderun stop the job.
int RunJob(const std::string& program, const MpiCommand& command);

}  // namespace horde::launcher

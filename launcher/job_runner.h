#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>

#include "launcher/mpi_command.h"

namespace horde::launcher {

// Runs mpirun (at `program`) in a process group of its own, with the launcher
// variables added to horderun's environment, and waits for it. SIGINT, SIGTERM and
// SIGHUP that reach horderun are passed to that group; if it is still running 10 s
// after one, the group is killed. Returns mpirun's exit code, or 128 + N when signal N
// made horderun stop the job.
int RunJob(const std::string& program, const MpiCommand& command);

// Starts mpirun as RunJob does, without waiting: in its own process group, with
// `old_mask` as its signal mask and, when `stderr_fd` >= 0, that as its stderr.
// The caller has blocked the signals it waits for. Throws std::system_error.
pid_t StartJob(const std::string& program, const MpiCommand& command, const sigset_t& old_mask,
               int stderr_fd = -1);

}  // namespace horde::launcher

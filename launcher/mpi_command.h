#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "launcher/environment.h"
#include "launcher/job_spec.h"
#include "launcher/mpi_flavor.h"

namespace horde::launcher {

// An mpirun invocation: its arguments, and variables for mpirun itself (not the ranks).
struct MpiCommand {
  std::vector<std::string> argv;  // argv[0] is "mpirun"
  std::vector<EnvVar> launcher_env;
};

// The command for the job in the dialect of `flavor`. Throws UsageError for a job that
// this MPI cannot express.
MpiCommand BuildMpiCommand(MpiFlavor flavor, const JobSpec& job);

// Appends words to an argv; for the builders of each flavour.
void AppendWords(std::vector<std::string>& argv, std::initializer_list<std::string> words);

// "NAME=value mpirun ...", quoted so a shell runs exactly this.
std::string FormatCommand(const MpiCommand& command);

}  // namespace horde::launcher

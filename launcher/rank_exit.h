#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/generation_output.h"

namespace horde::launcher {

// How an elastic job learns which rank failed without depending on mpirun's wording:
// every rank runs as `horderun --rank-exit-wrapper COMMAND...`, a small parent that
// passes signals on to COMMAND, waits for it, and, when it failed, writes one line to
// its stderr (which mpirun forwards to horderun from every host):
//   horde rank 2 on hostB: killed by signal 9
//   horde rank 0 on hostA: exit code 3
// then ends as COMMAND did. An exit with 0 or one of elastic_exit_codes.h, a death by
// SIGUSR1 (horderun's host-update signal, come before the rank installed its handler),
// or a death by a signal the wrapper passed on (mpirun stopping the bystanders of a
// failure) is no failure of this rank and writes nothing. mpirun's own message, when it
// names a failure, comes first (it names the first rank to fail, also when a wrapper
// itself was killed); these lines are the record otherwise (MPICH names no rank).

inline constexpr const char* kRankExitWrapperFlag = "--rank-exit-wrapper";

// Runs `command` (argv, searched on PATH) as described; returns the exit code for
// main(), or does not return when COMMAND died of a signal (the wrapper dies of it too).
int RunRankExitWrapper(const std::vector<std::string>& command);

// The rank, and how it ended, in a wrapper's line anywhere in `line` (mpirun may prefix
// a tag).
std::optional<RankEnd> RankEndInExitLine(const std::string& line);

}  // namespace horde::launcher

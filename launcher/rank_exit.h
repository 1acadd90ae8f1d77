#pragma once

#include <optional>
#include <string>
#include <vector>

namespace horde::launcher {

// How an elastic job learns which rank failed without depending on mpirun's wording:
// every rank runs as `horderun --rank-exit-wrapper COMMAND...`, a small parent that
// passes signals on to COMMAND, waits for it, and, when it failed, writes one line to
// its stderr (which mpirun forwards to horderun from every host):
//   horde rank 2 on hostB: killed by signal 9
//   horde rank 0 on hostA: exit code 3
// then ends as COMMAND did. An exit with 0 or the reset code, or a death by SIGUSR1
// (horderun's host-update signal, come before the rank installed its handler), is no
// failure and writes nothing. The first such line names the failed rank; mpirun's own
// message is the fallback (the wrapper itself killed, output sent to files).

inline constexpr const char* kRankExitWrapperFlag = "--rank-exit-wrapper";

// Runs `command` (argv, searched on PATH) as described; returns the exit code for
// main(), or does not return when COMMAND died of a signal (the wrapper dies of it too).
int RunRankExitWrapper(const std::vector<std::string>& command);

// The rank named by a wrapper's line, anywhere in `line` (mpirun may prefix a tag).
std::optional<int> FailedRankInExitLine(const std::string& line);

}  // namespace horde::launcher

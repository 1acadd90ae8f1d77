#pragma once

#include <signal.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "launcher/mpi_command.h"

namespace horde::launcher {

// Ranks exit with this code after committing when the job must re-form (hosts changed,
// or a collective failed because another rank died): see python/horde/common/elastic.
constexpr int kResetExitCode = 75;

// How one mpirun of an elastic job (a generation) ended.
struct GenerationEnd {
  enum Kind {
    kFinished,     // every rank exited 0: the training is done
    kReset,        // the ranks asked to re-form (exit code kResetExitCode)
    kRankFailed,   // a rank died or exited non-zero
    kStopped,      // horderun got SIGINT, SIGTERM or SIGHUP and stopped the job
    kCheckFailed,  // the periodic check threw (the discovery script failed)
  } kind = kFinished;
  int exit_code = 0;               // mpirun's
  std::optional<int> failed_rank;  // as its exit wrapper (rank_exit.h) or mpirun names it
  int stop_signal = 0;
  std::string message;  // kCheckFailed: why
};

// Runs one generation: starts mpirun with its stderr through horderun (passed on as it
// comes, and read for the rank that failed). Every `check_interval`, calls `hosts_changed`;
// the first time it returns true, mpirun gets SIGUSR1, which it passes to every rank:
// their next commit() raises HostsUpdatedInterrupt. If `hosts_changed` throws, the job
// is stopped and the end is kCheckFailed with the exception's message.
// `signals` (SIGINT, SIGTERM, SIGHUP, SIGCHLD) are blocked by the caller.
GenerationEnd RunGeneration(const std::string& program, const MpiCommand& command,
                            const sigset_t& signals, const sigset_t& old_mask,
                            std::chrono::milliseconds check_interval,
                            const std::function<bool()>& hosts_changed);

// The rank mpirun names as the first to fail in one line of its stderr, e.g.
// "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."
// or "  Process name: [[4711,1],2]".
std::optional<int> FailedRankIn(const std::string& line);

}  // namespace horde::launcher

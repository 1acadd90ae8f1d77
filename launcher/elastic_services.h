#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/generation_output.h"
#include "launcher/host_list.h"

namespace horde::launcher {

// What the elastic supervisor's loop (elastic_loop.h) drives: the discovery script, ssh
// checks and the running generation, each started by one call and then polled without
// blocking, so that none of them holds up the others or the stop signals. The real ones
// run child processes; the tests give fakes.

using ElasticClock = std::chrono::steady_clock;
using ElasticTime = ElasticClock::time_point;

// One run of the discovery script.
struct DiscoveryResult {
  std::optional<std::vector<Host>> hosts;  // none: the run failed, as `error` says
  std::string error;                       // one line
  std::vector<std::string> stderr_lines;   // what it wrote on stderr, for the log
};

class HostDiscovery {
 public:
  virtual ~HostDiscovery() = default;
  virtual void Start() = 0;                           // one run, in the background
  virtual std::optional<DiscoveryResult> Poll() = 0;  // its result, once it is done
};

// A remote host that failed its ssh check: `line` says why and what to do, one line.
struct SshCheckFailure {
  std::string host;
  std::string line;
};

class SshChecker {
 public:
  virtual ~SshChecker() = default;
  virtual void Start(const std::vector<std::string>& hosts) = 0;
  virtual std::optional<std::vector<SshCheckFailure>> Poll() = 0;  // once all are done
};

// A generation to start: its number, its hosts (ranks fill them in order) and the
// newest commit that a rank of the job announced, which the ranks must find.
struct GenerationPlan {
  int generation = 0;
  std::vector<Host> hosts;
  std::optional<std::string> expect_commit;
};

// How a generation's mpirun ended, and what its stderr said (generation_output.h).
struct GenerationEnd {
  int exit_code = 0;  // mpirun's, 128 + N when it died of signal N
  std::optional<RankEnd> named_by_mpirun;
  std::optional<RankEnd> named_by_wrapper;
  std::vector<int> stalled_ranks;
  std::optional<std::string> commit;
  std::string complaint;  // mpirun's line for a failure that names no rank
};

class GenerationRunner {
 public:
  virtual ~GenerationRunner() = default;
  virtual void Start(const GenerationPlan& plan) = 0;
  // Watches the generation for up to `wait`; its end, once mpirun has exited.
  virtual std::optional<GenerationEnd> Poll(std::chrono::milliseconds wait) = 0;
  // The ranks whose exit wrappers reported a failure (rank_exit.h) since the last call, as
  // their lines came, the generation's end included: in place, while the others go on.
  virtual std::vector<RankEnd> TakeRankFailures() = 0;
  // Tells every rank that the hosts changed (SIGUSR1 to mpirun, which passes it on).
  virtual void SendHostUpdate() = 0;
  // Passes `signal` on to mpirun's group, kills the group if it outlives a grace period;
  // the next Poll() gives the end.
  virtual void Stop(int signal) = 0;
};

// SIGINT, SIGTERM and SIGHUP sent to horderun.
class StopSignals {
 public:
  virtual ~StopSignals() = default;
  virtual int Take(std::chrono::milliseconds wait) = 0;  // the signal, or 0 after `wait`
  virtual ElasticTime Now() = 0;                         // the clock the loop goes by
};

}  // namespace horde::launcher

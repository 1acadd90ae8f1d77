#include "launcher/elastic_supervisor.h"

#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "launcher/child_process.h"
#include "launcher/elastic_generation.h"
#include "launcher/elastic_hosts.h"
#include "launcher/host_discovery.h"
#include "launcher/mpi_command.h"
#include "launcher/rank_exit.h"
#include "launcher/shell_words.h"
#include "launcher/ssh_check.h"

namespace horde::launcher {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDiscoveryInterval = std::chrono::seconds(1);
constexpr auto kDiscoveryTimeout = std::chrono::seconds(30);
constexpr int kGiveUpExitCode = 1;

// Why an elastic job cannot go on: printed as one line, exit code kGiveUpExitCode.
class ElasticError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// horderun got SIGINT, SIGTERM or SIGHUP while no generation ran.
struct StopRequested {
  int signal;
};

// The per-job directory where ranks keep their last commit: on tmpfs (memory, so a
// commit costs a copy, not a disk write), removed when horderun ends. Ranks on other
// hosts create the same path there.
class JobDirectory {
 public:
  JobDirectory() {
    std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string pattern = base + "/horde-elastic-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      throw ElasticError("cannot create the job directory under " + base +
                         ": expected a "
                         "writable /dev/shm or /tmp");
    }
    path_ = pattern;
  }
  ~JobDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Supervisor {
  const LauncherOptions& options;
  const Environment& env;
  const LocalMachine& machine;
  const MpiInstall& mpi;
  int min_np, max_np;
  HostPool pool{machine.hostname, machine.addresses, options.blacklist_cooldown};
  std::vector<Host> discovered;
  std::set<std::string> reachable;  // remote hosts whose ssh check passed (since left out)
  std::set<std::string> ran_ranks;  // remote hosts that ran ranks: their commits to remove
  std::optional<JobDirectory> dir;
  SshOptions ssh;  // as every generation's JobSpec has them
  bool omp_notice_given = false;
  std::string self_path = std::filesystem::read_symlink("/proc/self/exe").string();
  sigset_t signals;  // blocked; picked up here and by RunGeneration
  sigset_t old_mask;

  // Sleeps for `interval`, but a stop signal ends the wait (and the job) at once.
  void Pause(std::chrono::seconds interval) {
    timespec wait{static_cast<time_t>(interval.count()), 0};
    auto until = Clock::now() + interval;
    while (Clock::now() < until) {
      int signal = sigtimedwait(&signals, nullptr, &wait);
      if (signal > 0 && signal != SIGCHLD) throw StopRequested{signal};
      if (signal < 0) return;  // the interval passed
    }
  }

  // The hosts a generation would run on now: discovered, usable, and the remote ones
  // reachable over ssh. A remote host is checked when it is new, and again when it comes
  // back after being left out; one that fails is left out (with a cool-down if set).
  std::vector<Host> Discover() {
    discovered = DiscoverHosts(options.host_discovery_script, options.slots_per_host,
                               kDiscoveryTimeout);
    for (const std::string& host : pool.EndCooldowns(Clock::now())) {
      std::cerr << "horderun: host " << host << " is back after its cool-down" << std::endl;
    }
    while (true) {
      std::vector<Host> hosts = TakeSlots(pool.Usable(discovered), max_np);
      JobSpec job = Generation(hosts, 0);  // its ssh_hosts: those mpirun reaches over ssh
      std::vector<std::string> unchecked;
      for (const std::string& host : job.ssh_hosts) {
        if (!reachable.count(host)) unchecked.push_back(host);
      }
      if (unchecked.empty()) return hosts;
      std::cerr << "horderun: checking ssh to " << JoinShellWords(unchecked) << std::endl;
      auto failures = CheckSshReachability(unchecked, job.ssh, options.start_timeout_seconds,
                                           FindProgram("ssh", env));
      for (const SshFailure& failure : failures) {
        std::cerr << "horderun: " << DescribeSshFailure(failure, job.ssh) << "; "
                  << pool.Exclude(failure.host, Clock::now()) << std::endl;
      }
      for (const std::string& host : unchecked) reachable.insert(host);
      for (const SshFailure& failure : failures) reachable.erase(failure.host);
    }
  }

  // The hosts of the next generation, once they have --min-np slots.
  std::vector<Host> WaitForSlots() {
    auto deadline = Clock::now() + std::chrono::seconds(options.elastic_timeout_seconds);
    bool said = false;
    while (true) {
      std::vector<Host> hosts = Discover();
      int slots = TotalSlots(hosts);
      if (slots >= min_np) return hosts;
      if (Clock::now() >= deadline) {
        throw ElasticError("only " + std::to_string(slots) + " usable slot(s) (" +
                           (hosts.empty() ? "no hosts" : FormatHostList(hosts)) + ") for " +
                           std::to_string(options.elastic_timeout_seconds) +
                           " s (--elastic-timeout), expected at least --min-np " +
                           std::to_string(min_np));
      }
      if (!said) {
        std::cerr << "horderun: waiting for at least " << min_np << " slots (have " << slots << ")"
                  << std::endl;
        said = true;
      }
      Pause(kDiscoveryInterval);
    }
  }

  JobSpec Generation(const std::vector<Host>& hosts, int generation) {
    LauncherOptions fixed = options;
    fixed.hosts = hosts;
    fixed.num_proc = TotalSlots(hosts);
    JobSpec job = MakeJobSpec(fixed, env, machine);
    ssh = job.ssh;
    job.set_env.push_back({"HORDE_ELASTIC_DIR", dir->path()});
    job.set_env.push_back({"HORDE_ELASTIC_GENERATION", std::to_string(generation)});
    // Every rank runs under this horderun's exit wrapper, found at the same path on
    // every host, as the ranks' Python is.
    job.command.insert(job.command.begin(), {self_path, kRankExitWrapperFlag});
    return job;
  }

  std::string Reason(const GenerationEnd& end, const std::vector<Host>& hosts) {
    if (end.kind == GenerationEnd::kReset) return "the ranks committed and asked to re-form";
    std::string what = "exit code " + std::to_string(end.exit_code);
    if (!end.failed_rank) return "a rank failed (" + what + "; mpirun did not say which)";
    std::string host = HostOfRank(hosts, *end.failed_rank);
    std::string rank = "rank " + std::to_string(*end.failed_rank);
    if (host.empty()) return rank + " failed (" + what + ")";
    reachable.erase(host);  // checked again should it come back
    return rank + " on " + host + " failed (" + what + "); " +
           pool.RecordFailure(host, discovered, Clock::now());
  }

  int Run() {
    dir.emplace();
    for (int resets = 0, generation = 0;; ++generation) {
      std::vector<Host> hosts = WaitForSlots();
      JobSpec job = Generation(hosts, generation);
      ran_ranks.insert(job.ssh_hosts.begin(), job.ssh_hosts.end());
      if (job.omp_threads_defaulted && !omp_notice_given) {
        std::cerr << "horderun: " << OmpThreadsNotice(job) << std::endl;
        omp_notice_given = true;
      }
      MpiCommand command = BuildMpiCommand(mpi.flavor, job);
      std::cerr << "horderun: elastic generation " << generation << ": " << job.num_proc
                << " rank(s) on " << FormatHostList(hosts) << std::endl;
      if (options.verbose) std::cerr << "horderun: " << FormatCommand(command) << std::endl;
      GenerationEnd end = RunGeneration(mpi.path, command, signals, old_mask, kDiscoveryInterval,
                                        [&] { return Discover() != hosts; });
      if (end.kind == GenerationEnd::kFinished) return 0;
      if (end.kind == GenerationEnd::kStopped) return 128 + end.stop_signal;
      if (end.kind == GenerationEnd::kCheckFailed)
        throw ElasticError(end.message + "; job stopped");
      std::string reason = Reason(end, hosts);
      if (options.reset_limit && resets >= *options.reset_limit) {
        throw ElasticError("giving up: " + reason + ", and the job was already reset " +
                           std::to_string(resets) + " time(s) (--reset-limit " +
                           std::to_string(*options.reset_limit) + ")");
      }
      ++resets;
      std::cerr << "horderun: reset " << resets << ": " << reason
                << "; restarting from the last commit" << std::endl;
    }
  }

  // The job directory on the other hosts that ran ranks (tmpfs is their memory); this
  // machine's goes with `dir`. After the job, whichever way it ended.
  void RemoveRemoteDirectories() {
    if (!dir || ran_ranks.empty()) return;
    std::vector<std::string> hosts(ran_ranks.begin(), ran_ranks.end());
    for (const SshFailure& failure :
         RunOverSsh(hosts, ssh, options.start_timeout_seconds, FindProgram("ssh", env),
                    {"rm", "-rf", "--", QuoteShellWord(dir->path())})) {
      std::cerr << "horderun: could not remove " << dir->path() << " on " << failure.host << ": "
                << failure.reason << std::endl;
    }
  }
};

}  // namespace

int RunElasticJob(const LauncherOptions& options, const Environment& env,
                  const LocalMachine& machine, const MpiInstall& mpi) {
  int np = options.num_proc.value_or(options.min_np.value_or(1));
  int min_np = options.min_np.value_or(np);
  Supervisor supervisor{options, env,    machine,
                        mpi,     min_np, options.max_np.value_or(std::max(np, min_np))};
  sigset_t& signals = supervisor.signals;
  sigemptyset(&signals);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&signals, signal);
  sigprocmask(SIG_BLOCK, &signals, &supervisor.old_mask);
  int code = kGiveUpExitCode;
  try {
    code = supervisor.Run();
  } catch (const StopRequested& stop) {
    code = 128 + stop.signal;
  } catch (const ElasticError& error) {
    std::cerr << "horderun: " << error.what() << std::endl;
  } catch (const DiscoveryError& error) {
    std::cerr << "horderun: " << error.what() << std::endl;
  }
  supervisor.RemoveRemoteDirectories();
  sigprocmask(SIG_SETMASK, &supervisor.old_mask, nullptr);
  return code;
}

}  // namespace horde::launcher

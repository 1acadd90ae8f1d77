#include "launcher/elastic_supervisor.h"

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <iostream>
#include <set>

#include "launcher/child_process.h"
#include "launcher/elastic_generation.h"
#include "launcher/elastic_loop.h"
#include "launcher/elastic_mode.h"
#include "launcher/job_directory.h"
#include "launcher/mpi_command.h"
#include "launcher/parallel_ssh_check.h"
#include "launcher/rank_exit.h"
#include "launcher/script_discovery.h"
#include "launcher/shell_words.h"
#include "launcher/ssh_check.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

constexpr auto kDiscoveryTimeout = std::chrono::seconds(30);
constexpr int kGiveUpExitCode = 1;
// Set by horderun for the ranks; an outer job's values must not leak into this one.
const char* const kElasticVariables[] = {"HORDE_ELASTIC_DIR", "HORDE_ELASTIC_GENERATION",
                                         "HORDE_ELASTIC_EXPECT_COMMIT", "HORDE_ELASTIC_IN_PLACE",
                                         "HORDE_ELASTIC_MIN_NP"};

void Say(const std::string& line) { std::cerr << "horderun: " << line << std::endl; }

// SIGINT, SIGTERM and SIGHUP, blocked (with SIGCHLD) and picked up here.
class BlockedStopSignals : public StopSignals {
 public:
  explicit BlockedStopSignals(const sigset_t& signals) : signals_(signals) {}
  int Take(std::chrono::milliseconds wait) override {
    auto until = Now() + wait;
    while (true) {
      auto left = std::max(ElasticClock::duration::zero(), until - Now());
      auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
      timespec timeout{static_cast<time_t>(seconds.count()),
                       static_cast<long>((left - seconds) / std::chrono::nanoseconds(1))};
      int signal = sigtimedwait(&signals_, nullptr, &timeout);
      if (signal > 0 && signal != SIGCHLD) return signal;
      if ((signal < 0 && errno != EINTR) || Now() >= until) return 0;
    }
  }
  ElasticTime Now() override { return ElasticClock::now(); }

 private:
  sigset_t signals_;
};

// The job's directories: this machine's (removed with the object) and, on the other
// hosts that ran ranks, removed over ssh with those that dead horderuns left here.
class JobDirectories {
 public:
  JobDirectories(const LauncherOptions& options, const Environment& env, SshOptions ssh)
      : options_(options), env_(env), ssh_(std::move(ssh)) {
    for (const std::string& path : RemoveAbandonedJobDirectories(JobDirectory::DefaultBase())) {
      Say("removed " + path + ", left by a horderun that ended without cleaning up");
      abandoned_.push_back(path);
    }
    local_.emplace();
  }
  ~JobDirectories() { RemoveRemote(); }

  const std::string& path() const { return local_->path(); }
  void RanRanksOn(const std::vector<std::string>& hosts) {
    remote_.insert(hosts.begin(), hosts.end());
  }

 private:
  void RemoveRemote() {
    if (remote_.empty()) return;
    std::vector<std::string> remove = {"rm", "-rf", "--", QuoteShellWord(path())};
    for (const std::string& path : abandoned_) remove.push_back(QuoteShellWord(path));
    std::vector<std::string> hosts(remote_.begin(), remote_.end());
    for (const SshFailure& failure : RunOverSsh(hosts, ssh_, options_.start_timeout_seconds,
                                                FindProgram("ssh", env_), remove)) {
      Say("could not remove " + path() + " on " + failure.host + ": " + failure.reason);
    }
  }

  const LauncherOptions& options_;
  const Environment& env_;
  SshOptions ssh_;
  std::vector<std::string> abandoned_;
  std::optional<JobDirectory> local_;
  std::set<std::string> remote_;
};

// Builds each generation's mpirun command (in place: ApplyElasticMode's), and says what
// it starts.
class GenerationCommands {
 public:
  GenerationCommands(const LauncherOptions& options, const Environment& env,
                     const LocalMachine& machine, const MpiInstall& mpi, JobDirectories& dirs,
                     const ElasticSettings& settings)
      : options_(options),
        env_(env),
        machine_(machine),
        mpi_(mpi),
        dirs_(dirs),
        settings_(settings) {}

  MpiCommand operator()(const GenerationPlan& plan) {
    LauncherOptions fixed = options_;
    fixed.hosts = plan.hosts;
    fixed.num_proc = TotalSlots(plan.hosts);
    JobSpec job = MakeJobSpec(fixed, env_, machine_);
    job.set_env.push_back({"HORDE_ELASTIC_GENERATION", std::to_string(plan.generation)});
    ApplyElasticMode(settings_.in_place, settings_.min_np, job);
    job.private_env.push_back({"HORDE_ELASTIC_DIR", dirs_.path()});
    if (plan.expect_commit) {
      job.private_env.push_back({"HORDE_ELASTIC_EXPECT_COMMIT", *plan.expect_commit});
    }
    // Every rank runs under this horderun's exit wrapper, found at the same path on
    // every host, as the ranks' Python is.
    job.command.insert(job.command.begin(), {self_path_, kRankExitWrapperFlag});
    dirs_.RanRanksOn(job.ssh_hosts);
    if (job.omp_threads_defaulted && !omp_notice_given_) {
      Say(OmpThreadsNotice(job));
      omp_notice_given_ = true;
    }
    MpiCommand command = BuildMpiCommand(mpi_.flavor, job);
    Say("elastic generation " + std::to_string(plan.generation) + ": " +
        std::to_string(job.num_proc) + " rank(s) on " + FormatHostList(plan.hosts));
    if (options_.verbose) Say(FormatCommand(command));
    return command;
  }

 private:
  const LauncherOptions& options_;
  const Environment& env_;
  const LocalMachine& machine_;
  const MpiInstall& mpi_;
  JobDirectories& dirs_;
  const ElasticSettings& settings_;
  std::string self_path_ = std::filesystem::read_symlink("/proc/self/exe").string();
  bool omp_notice_given_ = false;
};

// The ssh options every generation's JobSpec has (checking them once, up front).
SshOptions SshOptionsOf(const LauncherOptions& options, const Environment& env,
                        const LocalMachine& machine) {
  LauncherOptions one = options;
  one.hosts = {{"localhost", 1}};
  one.num_proc = 1;
  return MakeJobSpec(one, env, machine).ssh;
}

// The policy's settings; the elastic mode is decided here, once, and said in one line.
ElasticSettings SettingsOf(const LauncherOptions& options, const MpiInstall& mpi) {
  int np = options.num_proc.value_or(options.min_np.value_or(1));
  ElasticSettings settings;
  settings.min_np = options.min_np.value_or(np);
  settings.max_np = options.max_np.value_or(std::max(np, settings.min_np));
  settings.elastic_timeout = std::chrono::seconds(options.elastic_timeout_seconds);
  settings.reset_limit = options.reset_limit;
  settings.script = options.host_discovery_script;
  ElasticModeChoice mode = ChooseElasticMode(options.elastic_mode.value_or(ElasticMode::kAuto), mpi,
                                             [&] { return ProbeUlfm(mpi.path); });
  if (!mode.line.empty()) Say(mode.line);
  settings.in_place = mode.in_place;
  return settings;
}

int Supervise(const LauncherOptions& options, const Environment& env, const LocalMachine& machine,
              const MpiInstall& mpi, const sigset_t& signals, const sigset_t& old_mask) {
  const ElasticSettings settings = SettingsOf(options, mpi);
  SshOptions ssh = SshOptionsOf(options, env, machine);
  JobDirectories dirs(options, env, ssh);
  ScriptDiscovery discovery(options.host_discovery_script, options.slots_per_host,
                            kDiscoveryTimeout);
  ParallelSshCheck ssh_check(ssh, options.start_timeout_seconds, FindProgram("ssh", env));
  MpirunGeneration generation(
      mpi.path, GenerationCommands(options, env, machine, mpi, dirs, settings), old_mask);
  BlockedStopSignals stop_signals(signals);
  ElasticPolicy policy(settings,
                       HostPool(machine.hostname, machine.addresses, options.blacklist_cooldown),
                       stop_signals.Now());
  return RunElasticLoop(policy, {discovery, ssh_check, generation, stop_signals, Say});
}

}  // namespace

int RunElasticJob(const LauncherOptions& options, const Environment& env,
                  const LocalMachine& machine, const MpiInstall& mpi) {
  Environment own_env = env;
  for (const char* name : kElasticVariables) {
    own_env.erase(name);
    unsetenv(name);  // mpirun's environment is horderun's
  }
  sigset_t signals, old_mask;
  sigemptyset(&signals);
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&signals, signal);
  sigprocmask(SIG_BLOCK, &signals, &old_mask);
  int code = kGiveUpExitCode;
  try {
    code = Supervise(options, own_env, machine, mpi, signals, old_mask);
  } catch (const UsageError&) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    throw;  // bad input: main() says so, with its exit code
  } catch (const std::exception& error) {
    Say(error.what());
  } catch (...) {
    Say("elastic job stopped by an unexpected error");
  }
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  return code;
}

}  // namespace horde::launcher

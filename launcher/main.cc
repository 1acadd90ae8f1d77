// horderun: starts a horde job through the installed mpirun. See HelpText() and the
// README's "Launching jobs: horderun".
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "launcher/check_build.h"
#include "launcher/child_process.h"
#include "launcher/elastic_supervisor.h"
#include "launcher/job_runner.h"
#include "launcher/job_spec.h"
#include "launcher/launcher_options.h"
#include "launcher/mpi_command.h"
#include "launcher/rank_exit.h"
#include "launcher/ssh_check.h"
#include "launcher/tuning_flags.h"
#include "launcher/usage_error.h"
#include "launcher/version.h"

namespace horde::launcher {
namespace {

constexpr int kUsageExitCode = 2;

void PrintDryRun(const JobSpec& job, const MpiInstall& mpi, const MpiCommand& command,
                 const Environment& env) {
  std::cout << "# " << mpi.description << "; nothing was started\n"
            << "# environment for every rank:\n";
  for (const std::string& name : job.forwarded_env) {
    std::cout << name << "=" << env.at(name) << "\n";
  }
  for (const EnvVar& var : job.set_env) std::cout << var.name << "=" << var.value << "\n";
  std::cout << "# command:\n" << FormatCommand(command) << "\n";
}

// Returns false, after one line per host on stderr, when a host cannot be reached.
bool CheckHostsReachable(const JobSpec& job, const LauncherOptions& options,
                         const Environment& env) {
  if (job.ssh_hosts.empty()) return true;
  std::string ssh = FindProgram("ssh", env);
  if (ssh.empty()) {
    throw UsageError(
        "ssh not found on PATH, and it is needed to start ranks on other hosts: "
        "install an ssh client (Debian: apt-get install openssh-client)");
  }
  if (options.verbose) {
    std::cerr << "horderun: checking ssh to " << job.ssh_hosts.size() << " host(s)\n";
  }
  auto failures = CheckSshReachability(job.ssh_hosts, job.ssh, options.start_timeout_seconds, ssh);
  for (const SshFailure& failure : failures) {
    std::cerr << "horderun: " << DescribeSshFailure(failure, job.ssh) << "\n";
  }
  return failures.empty();
}

void CreateOutputDir(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw UsageError("--output-filename: cannot create '" + dir + "': " + error.message());
}

// The command of a --probe-topology job: the probe beside this horderun, with the file
// made absolute, since ranks start in the launching directory only on this host.
std::vector<std::string> ProbeCommand(const std::string& file) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path probe = self.parent_path() / "horde-topology";
  if (!std::filesystem::exists(probe)) {
    throw UsageError("--probe-topology: '" + probe.string() +
                     "' is missing: this horderun was installed without horde's probe");
  }
  return {probe.string(), "probe", "--output", std::filesystem::absolute(file).string()};
}

int Run(const std::vector<std::string>& args) {
  LauncherOptions options = ParseOptions(args);
  if (!options.probe_topology.empty()) options.command = ProbeCommand(options.probe_topology);
  Environment env = CurrentEnvironment();
  if (options.show_help) return std::cout << HelpText(), 0;
  if (options.show_version) return std::cout << "horderun " << kVersion << "\n", 0;
  if (options.check_build) return std::cout << DescribeBuild(env), 0;
  if (options.list_settings) return std::cout << SettingsListing(), 0;

  if (options.elastic()) {
    if (options.dry_run)
      throw UsageError(
          "--dry-run shows one mpirun command; an elastic job runs one per generation, printed as "
          "it starts with --verbose");
    return RunElasticJob(options, env, ThisMachine(), DetectMpi(env));
  }
  JobSpec job = MakeJobSpec(options, env, ThisMachine());
  MpiInstall mpi = DetectMpi(env);
  MpiCommand command = BuildMpiCommand(mpi.flavor, job);
  if (job.omp_threads_defaulted) std::cerr << "horderun: " << OmpThreadsNotice(job) << "\n";
  if (options.dry_run) return PrintDryRun(job, mpi, command, env), 0;
  if (!CheckHostsReachable(job, options, env)) return kUsageExitCode;
  if (!job.output_dir.empty()) CreateOutputDir(job.output_dir);
  if (options.verbose) std::cerr << "horderun: " << FormatCommand(command) << std::endl;
  return RunJob(mpi.path, command);
}

}  // namespace
}  // namespace horde::launcher

int main(int argc, char** argv) {
  using namespace horde::launcher;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == kRankExitWrapperFlag) {  // on a rank's host, not the user's
    return RunRankExitWrapper(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  try {
    return Run(args);
  } catch (const UsageError& error) {
    std::cerr << "horderun: " << error.what() << "\n";
    return kUsageExitCode;
  } catch (const std::exception& error) {
    std::cerr << "horderun: " << error.what() << "\n";
    return 1;
  }
}

#include "launcher/hydra_command.h"

#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

std::string JoinWith(const std::vector<std::string>& words, const std::string& separator) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : separator) + word;
  return text;
}

}  // namespace

MpiCommand BuildHydraCommand(const JobSpec& job) {
  if (job.fault_tolerant) {
    throw UsageError("in-place recovery needs Open MPI 5 or newer (mpirun --with-ft ulfm)");
  }
  std::vector<std::string> argv = {
      "mpirun",   "-n",  std::to_string(job.num_proc), "-hosts", FormatHostList(job.hosts),
      "-bind-to", "none"};
  if (!job.output_dir.empty()) {
    AppendWords(argv, {"-outfile-pattern", job.output_dir + "/rank.%r.stdout", "-errfile-pattern",
                       job.output_dir + "/rank.%r.stderr"});
  } else if (job.tag_output) {
    argv.push_back("-prepend-rank");
  }
  if (!job.network_interface.empty()) {
    if (job.network_interface.find(',') != std::string::npos) {
      throw UsageError("MPICH's Hydra takes one --network-interface, got '" +
                       job.network_interface + "': name a single interface");
    }
    AppendWords(argv, {"-iface", job.network_interface});
  }
  // Hydra passes every variable unless given a list: the ranks get what Open MPI's do.
  std::vector<std::string> by_name = job.forwarded_env;
  for (const EnvVar& var : job.private_env) by_name.push_back(var.name);
  if (!by_name.empty()) AppendWords(argv, {"-genvlist", JoinWith(by_name, ",")});
  for (const EnvVar& var : job.set_env) AppendWords(argv, {"-genv", var.name, var.value});
  argv.insert(argv.end(), job.mpi_args.begin(), job.mpi_args.end());
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  std::vector<EnvVar> launcher_env = job.private_env;
  std::string ssh_args = job.ssh_hosts.empty() ? "" : SshOptionString(job.ssh);
  if (!ssh_args.empty()) launcher_env.push_back({"HYDRA_LAUNCHER_EXTRA_ARGS", ssh_args});
  return {argv, launcher_env};
}

}  // namespace horde::launcher

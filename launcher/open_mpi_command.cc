#include "launcher/open_mpi_command.h"

namespace horde::launcher {

MpiCommand BuildOpenMpiCommand(const JobSpec& job) {
  std::vector<std::string> argv = {"mpirun"};
  if (job.run_as_root) argv.push_back("--allow-run-as-root");
  AppendWords(argv, {"-np", std::to_string(job.num_proc), "-H", FormatHostList(job.hosts),
                     "--map-by", "slot", "--bind-to", "none"});
  if (job.oversubscribe) argv.push_back("--oversubscribe");
  if (!job.output_dir.empty()) {
    AppendWords(argv, {"--output-filename", job.output_dir});
  } else if (job.tag_output) {
    argv.push_back("--tag-output");
  }
  std::string rsh_args = job.ssh_hosts.empty() ? "" : SshOptionString(job.ssh);
  if (!rsh_args.empty()) AppendWords(argv, {"--mca", "plm_rsh_args", rsh_args});
  if (!job.network_interface.empty()) {
    AppendWords(argv, {"--mca", "btl_tcp_if_include", job.network_interface,
                       "--mca", "oob_tcp_if_include", job.network_interface});
  }
  for (const std::string& name : job.forwarded_env) AppendWords(argv, {"-x", name});
  for (const EnvVar& var : job.set_env) AppendWords(argv, {"-x", var.name + "=" + var.value});
  argv.insert(argv.end(), job.mpi_args.begin(), job.mpi_args.end());
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  return {argv, {}};
}

}  // namespace horde::launcher

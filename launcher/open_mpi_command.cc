#include "launcher/open_mpi_command.h"

#include "launcher/usage_error.h"

namespace horde::launcher {

MpiCommand BuildOpenMpiCommand(const JobSpec& job, bool prrte) {
  std::vector<std::string> argv = {"mpirun"};
  if (job.run_as_root) argv.push_back("--allow-run-as-root");
  if (job.fault_tolerant) {
    if (!prrte) {
      throw UsageError("in-place recovery needs Open MPI 5 or newer (mpirun --with-ft ulfm)");
    }
    AppendWords(argv, {"--with-ft", "ulfm"});
  }
  const std::string map_by = prrte && job.oversubscribe ? "slot:OVERSUBSCRIBE" : "slot";
  AppendWords(argv, {"-np", std::to_string(job.num_proc), "-H", FormatHostList(job.hosts),
                     "--map-by", map_by, "--bind-to", "none"});
  if (!prrte && job.oversubscribe) argv.push_back("--oversubscribe");
  if (!job.output_dir.empty()) {
    if (prrte) {
      AppendWords(argv, {"--output", "dir=" + job.output_dir + ",merge-stderr-to-stdout"});
    } else {
      AppendWords(argv, {"--output-filename", job.output_dir});
    }
  } else if (job.tag_output) {
    if (prrte) {
      AppendWords(argv, {"--output", "tag"});
    } else {
      argv.push_back("--tag-output");
    }
  }
  // PRRTE's parameters (its ssh launcher, its daemons' network) go with --prtemca;
  // Open MPI's own (the MPI library's TCP transport) still with --mca.
  const std::string runtime_mca = prrte ? "--prtemca" : "--mca";
  std::string rsh_args = job.ssh_hosts.empty() ? "" : SshOptionString(job.ssh);
  if (!rsh_args.empty()) {
    AppendWords(argv, {runtime_mca, prrte ? "plm_ssh_args" : "plm_rsh_args", rsh_args});
  }
  if (!job.network_interface.empty()) {
    AppendWords(argv, {"--mca", "btl_tcp_if_include", job.network_interface, runtime_mca,
                       "oob_tcp_if_include", job.network_interface});
  }
  for (const std::string& name : job.forwarded_env) AppendWords(argv, {"-x", name});
  for (const EnvVar& var : job.set_env) AppendWords(argv, {"-x", var.name + "=" + var.value});
  for (const EnvVar& var : job.private_env) AppendWords(argv, {"-x", var.name});
  argv.insert(argv.end(), job.mpi_args.begin(), job.mpi_args.end());
  argv.insert(argv.end(), job.command.begin(), job.command.end());
  return {argv, job.private_env};
}

}  // namespace horde::launcher

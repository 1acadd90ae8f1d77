#pragma once

#include <string>
#include <vector>

#include "launcher/environment.h"
#include "launcher/host_list.h"
#include "launcher/launcher_options.h"
#include "launcher/ssh_options.h"

namespace horde::launcher {

// Facts about the machine horderun runs on.
struct LocalMachine {
  int cores = 1;
  bool is_root = false;
  std::string hostname;
  std::vector<std::string> addresses;  // of its network interfaces, numeric
  std::string working_dir;
};

LocalMachine ThisMachine();

enum class HostSource { kLocal, kFlag, kHostfile, kSlurm };

// The job to launch, whatever the MPI: the options resolved against the environment and
// the machine, and checked against each other.
struct JobSpec {
  int num_proc = 1;
  std::vector<Host> hosts;  // never empty: a local run has localhost with one slot per core
  HostSource host_source = HostSource::kLocal;
  bool oversubscribe = false;  // a local run asked for more ranks than cores
  bool run_as_root = false;
  std::vector<std::string> ssh_hosts;  // the hosts mpirun reaches over ssh
  SshOptions ssh;
  std::string network_interface;
  std::vector<std::string> forwarded_env;  // names of variables passed on as they are
  std::vector<EnvVar> set_env;             // variables horderun sets for every rank
  // Variables every rank gets whose values stay off mpirun's command line (which any
  // user can read in ps): set in mpirun's own environment and passed on by name.
  std::vector<EnvVar> private_env;
  bool omp_threads_defaulted = false;  // set_env has OMP_NUM_THREADS=1 from horderun
  std::vector<std::string> mpi_args;
  std::string output_dir;  // absolute; empty for output on the terminal
  // Open MPI 4.1's tagging misplaces tags when a line arrives in two pieces, so plain
  // output is the default and tags are asked for.
  bool tag_output = false;
  // An elastic job recovering in place: mpirun runs with Open MPI 5's fault-tolerance
  // extension (--with-ft ulfm), so that a rank's death does not end the job.
  bool fault_tolerant = false;
  std::vector<std::string> command;
};

// torchrun's rule: when OMP_NUM_THREADS is not set and a host runs more than one rank,
// every rank gets OMP_NUM_THREADS=1, or each would start a thread per core and the host
// would run ranks x cores threads. The notice horderun prints then, one line.
std::string OmpThreadsNotice(const JobSpec& job);

// Hosts come from -H, else --hostfile, else the Slurm allocation, else this machine.
// Throws UsageError on bad input: -np above the slots, an unreadable hostfile or key...
JobSpec MakeJobSpec(const LauncherOptions& options, const Environment& env,
                    const LocalMachine& machine);

}  // namespace horde::launcher

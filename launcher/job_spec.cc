#include "launcher/job_spec.h"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "launcher/elastic_hosts.h"
#include "launcher/env_forwarding.h"
#include "launcher/slurm.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

struct HostChoice {
  std::vector<Host> hosts;
  HostSource source;
  std::string description;  // where the slots came from, for messages
};

HostChoice ChooseHosts(const LauncherOptions& options, const Environment& env,
                       const LocalMachine& machine) {
  if (!options.hosts.empty()) {
    return {options.hosts, HostSource::kFlag, "-H " + FormatHostList(options.hosts)};
  }
  if (!options.hostfile.empty()) {
    std::vector<Host> hosts = ReadHostfile(options.hostfile);
    return {hosts, HostSource::kHostfile,
            "--hostfile " + options.hostfile + " (" + FormatHostList(hosts) + ")"};
  }
  if (auto hosts = SlurmHosts(env)) {
    return {*hosts, HostSource::kSlurm, "the Slurm allocation (" + FormatHostList(*hosts) + ")"};
  }
  return {{{"localhost", machine.cores}}, HostSource::kLocal, "this machine"};
}

int NumProc(const LauncherOptions& options, const HostChoice& choice) {
  int slots = TotalSlots(choice.hosts);
  if (!options.num_proc) {
    if (choice.source != HostSource::kLocal) return slots;
    throw UsageError(
        "-np is missing: say how many processes to start, e.g. "
        "horderun -np 2 python3 train.py");
  }
  if (*options.num_proc > slots && choice.source != HostSource::kLocal) {
    throw UsageError("-np " + std::to_string(*options.num_proc) +
                     " asks for more processes "
                     "than the " +
                     std::to_string(slots) + " slots of " + choice.description +
                     ": lower -np or give more slots (host:slots)");
  }
  return *options.num_proc;
}

std::vector<std::string> SshHosts(const HostChoice& choice, const LocalMachine& machine) {
  // In a Slurm allocation mpirun starts its daemons with srun, not ssh.
  std::vector<std::string> names;
  if (choice.source != HostSource::kFlag && choice.source != HostSource::kHostfile) return names;
  for (const Host& host : choice.hosts) {
    if (!IsLocalHost(host.name, machine.hostname, machine.addresses)) {
      names.push_back(host.name);
    }
  }
  return names;
}

std::string Absolute(const std::string& path, const LocalMachine& machine) {
  return path.empty() || path[0] == '/' ? path : machine.working_dir + "/" + path;
}

void CheckReadable(const std::string& flag, const std::string& path) {
  if (!path.empty() && access(path.c_str(), R_OK) != 0) {
    throw UsageError(flag + ": cannot read '" + path + "': " + std::strerror(errno));
  }
}

std::vector<std::string> InterfaceAddresses() {
  std::vector<std::string> addresses;
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) return addresses;
  for (ifaddrs* entry = interfaces; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    socklen_t size = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    char text[NI_MAXHOST];
    if (getnameinfo(entry->ifa_addr, size, text, sizeof(text), nullptr, 0, NI_NUMERICHOST) == 0) {
      addresses.push_back(text);
    }
  }
  freeifaddrs(interfaces);
  return addresses;
}

// The most ranks one host runs: ranks fill hosts in order (--map-by slot), and a local
// run has them all on this machine.
int MostRanksPerHost(const JobSpec& job) {
  if (job.host_source == HostSource::kLocal) return job.num_proc;
  int most = 0;
  for (const Host& host : TakeSlots(job.hosts, job.num_proc)) most = std::max(most, host.slots);
  return most;
}

}  // namespace

std::string OmpThreadsNotice(const JobSpec& job) {
  return "OMP_NUM_THREADS is not set: every rank gets OMP_NUM_THREADS=1 (as with torchrun), "
         "so that " +
         std::to_string(MostRanksPerHost(job)) +
         " ranks on one host do not "
         "each start a thread per core; set it to tune";
}

LocalMachine ThisMachine() {
  LocalMachine machine;
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) machine.cores = CPU_COUNT(&cpus);
  machine.is_root = geteuid() == 0;
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) machine.hostname = name;
  machine.addresses = InterfaceAddresses();
  char dir[PATH_MAX];
  if (getcwd(dir, sizeof(dir)) != nullptr) machine.working_dir = dir;
  return machine;
}

JobSpec MakeJobSpec(const LauncherOptions& options, const Environment& env,
                    const LocalMachine& machine) {
  HostChoice choice = ChooseHosts(options, env, machine);
  CheckReadable("--ssh-identity-file", options.ssh_identity_file);
  JobSpec job;
  job.num_proc = NumProc(options, choice);
  job.hosts = choice.hosts;
  job.host_source = choice.source;
  job.oversubscribe = choice.source == HostSource::kLocal && job.num_proc > machine.cores;
  job.run_as_root = machine.is_root;
  job.ssh_hosts = SshHosts(choice, machine);
  job.ssh = {options.ssh_port, Absolute(options.ssh_identity_file, machine)};
  job.network_interface = options.network_interface;
  job.set_env = options.tuning_env;
  if (!env.count("OMP_NUM_THREADS") && MostRanksPerHost(job) > 1) {
    job.set_env.insert(job.set_env.begin(), {"OMP_NUM_THREADS", "1"});
    job.omp_threads_defaulted = true;
  }
  if (!options.network_interface.empty()) {
    job.set_env.push_back({"NCCL_SOCKET_IFNAME", options.network_interface});
  }
  job.forwarded_env = ForwardedVariables(env, job.set_env);
  job.mpi_args = options.mpi_args;
  job.output_dir = Absolute(options.output_dir, machine);
  job.tag_output = options.tag_output;
  job.command = options.command;
  return job;
}

}  // namespace horde::launcher

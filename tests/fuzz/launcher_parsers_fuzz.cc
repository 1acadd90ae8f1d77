// libFuzzer target for horderun's parsers of host names from outside: -H host lists,
// hostfiles, Slurm node lists and task counts, elastic discovery output. Whatever the input: no
// crash, no hang, no exception but UsageError / invalid_argument; and for any accepted host list,
// no host in the mpirun command (each flavour) or in the ssh check's command can be read as an
// option: in mpirun's host list no entry starts with '-', and ssh gets the host only after "--".
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "launcher/host_discovery.h"
#include "launcher/host_list.h"
#include "launcher/mpi_command.h"
#include "launcher/slurm.h"
#include "launcher/ssh_check.h"
#include "launcher/usage_error.h"

namespace {

using horde::launcher::Host;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "launcher_parsers_fuzz: %s\n", what.c_str());
  std::abort();
}

void CheckHostListWord(const std::string& word) {
  size_t start = 0;
  while (start <= word.size()) {
    size_t end = word.find(',', start);
    if (end == std::string::npos) end = word.size();
    if (end > start && word[start] == '-') Fail("a host list entry starts with '-': " + word);
    start = end + 1;
  }
}

void CheckCommands(const std::vector<Host>& hosts) {
  horde::launcher::JobSpec job;
  job.hosts = hosts;
  job.num_proc = horde::launcher::TotalSlots(hosts);
  job.command = {"python3", "train.py"};
  for (const Host& host : hosts) job.ssh_hosts.push_back(host.name);
  for (auto flavor :
       {horde::launcher::MpiFlavor::kOpenMpi, horde::launcher::MpiFlavor::kOpenMpiPrrte,
        horde::launcher::MpiFlavor::kHydra}) {
    std::vector<std::string> argv = horde::launcher::BuildMpiCommand(flavor, job).argv;
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "-H" || argv[i] == "-hosts" || argv[i] == "--host")
        CheckHostListWord(argv[i + 1]);
    }
  }
  for (const Host& host : hosts) {
    std::vector<std::string> argv = horde::launcher::SshCheckArgv(host.name, {}, 5, "ssh");
    size_t dashes = 0;
    while (dashes < argv.size() && argv[dashes] != "--") ++dashes;
    if (dashes + 1 >= argv.size() || argv[dashes + 1] != host.name) {
      Fail("ssh gets host '" + host.name + "' before \"--\"");
    }
  }
}

// The first byte picks the parser; the rest is its input.
void Parse(uint8_t which, const std::string& text) {
  switch (which % 5) {
    case 0: CheckCommands(horde::launcher::ParseHostList(text)); break;
    case 1: CheckCommands(horde::launcher::ParseHostfile(text, "hosts.txt")); break;
    case 2: {
      size_t split = text.find('\n');
      std::string nodes = text.substr(0, split);
      std::string tasks = split == std::string::npos ? "1" : text.substr(split + 1);
      auto hosts = horde::launcher::SlurmHosts(
          {{"SLURM_JOB_NODELIST", nodes}, {"SLURM_TASKS_PER_NODE", tasks}});
      if (hosts) CheckCommands(*hosts);
      break;
    }
    case 3: horde::launcher::ExpandTasksPerNode(text); break;
    case 4:  // an elastic job's host discovery output
      CheckCommands(horde::launcher::ParseDiscoveryOutput(text, "discover.sh", 2));
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    Parse(data[0], text);
  } catch (const horde::launcher::UsageError&) {
  } catch (const std::invalid_argument&) {
  } catch (const horde::launcher::DiscoveryError&) {
  }
  return 0;
}

#include "launcher/launcher_options.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "launcher/host_name.h"
#include "launcher/numbers.h"
#include "launcher/shell_words.h"
#include "launcher/tuning_flags.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

using Apply = std::function<void(LauncherOptions&, const std::string& value)>;

struct OptionSpec {
  std::vector<std::string> names;
  std::string value_name;  // empty for a switch
  std::string help;
  Apply apply;
  int words = 1;  // how many words the value takes; apply() gets them joined by a space
};

int PositiveInt(const std::string& flag, const std::string& value, long long max,
                const std::string& example) {
  auto parsed = ParseNonNegativeInteger(value, max);
  if (!parsed || *parsed == 0) {
    throw UsageError(flag + " expects a whole number from 1 to " + std::to_string(max) + ", got '" +
                     value + "': e.g. " + flag + " " + example);
  }
  return static_cast<int>(*parsed);
}

std::string NonEmpty(const std::string& flag, const std::string& value, const std::string& what) {
  if (value.empty()) throw UsageError(flag + " expects " + what + ", got an empty value");
  return value;
}

// Interface names only (what ip link shows: eth0, ens5, ib0, bond0.100), comma-separated:
// the value reaches MPI's and NCCL's settings and must not smuggle anything else in.
std::string InterfaceNames(const std::string& value) {
  static const std::string kFix = ": e.g. --network-interface eth0 or --network-interface eth0,ib0";
  if (value.empty() || value.back() == ',') {
    throw UsageError("--network-interface expects interface names, got " + QuotedForMessage(value) +
                     kFix);
  }
  size_t start = 0;
  while (start < value.size()) {
    size_t end = std::min(value.find(',', start), value.size());
    const std::string name = value.substr(start, end - start);
    bool valid = !name.empty() && name.size() <= 15 && name.front() != '-' &&
                 std::all_of(name.begin(), name.end(), [](char c) {
                   return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                          c == '.' || c == ':';
                 });
    if (!valid) {
      throw UsageError(
          "--network-interface: " + QuotedForMessage(name) +
          " is not an interface "
          "name (1 to 15 letters, digits, '_', '-', '.' or ':', not starting with '-')" +
          kFix);
    }
    start = end + 1;
  }
  return value;
}

// "MIN MAX": Horovod's --blacklist-cooldown-range, two whole numbers of seconds.
CooldownRange CooldownRangeOf(const std::string& value) {
  size_t space = value.find(' ');
  auto min = ParseNonNegativeInteger(value.substr(0, space), 86400 * 7);
  std::optional<long long> max;
  if (space != std::string::npos) max = ParseNonNegativeInteger(value.substr(space + 1), 86400 * 7);
  if (!min || !max || *min == 0 || *min > *max) {
    throw UsageError(
        "--blacklist-cooldown-range expects two whole numbers of seconds, MIN MAX "
        "with 1 <= MIN <= MAX <= 604800, got " +
        QuotedForMessage(value) + ": e.g. --blacklist-cooldown-range 10 100");
  }
  return {static_cast<int>(*min), static_cast<int>(*max)};
}

ElasticMode ElasticModeOf(const std::string& value) {
  if (auto mode = ParseElasticMode(value)) return *mode;
  throw UsageError("--elastic-mode expects restart, in-place or auto, got " +
                   QuotedForMessage(value) + ": e.g. --elastic-mode restart");
}

const std::vector<OptionSpec>& OptionSpecs() {
  static const std::vector<OptionSpec> specs = {
      {{"-np", "--num-proc"},
       "N",
       "number of processes (default: all slots of the hosts)",
       [](LauncherOptions& o, const std::string& v) {
         o.num_proc = PositiveInt("-np", v, 1000000, "4");
       }},
      {{"-H", "--hosts"},
       "HOST:SLOTS,...",
       "hosts and how many ranks each runs",
       [](LauncherOptions& o, const std::string& v) { o.hosts = ParseHostList(v); }},
      {{"--hostfile"},
       "FILE",
       "hosts from a file of 'host slots=N' lines",
       [](LauncherOptions& o, const std::string& v) {
         o.hostfile = NonEmpty("--hostfile", v, "a file name");
       }},
      {{"-p", "--ssh-port"},
       "PORT",
       "ssh port of the remote hosts",
       [](LauncherOptions& o, const std::string& v) {
         o.ssh_port = PositiveInt("--ssh-port", v, 65535, "22");
       }},
      {{"-i", "--ssh-identity-file"},
       "FILE",
       "ssh private key for the remote hosts",
       [](LauncherOptions& o, const std::string& v) {
         o.ssh_identity_file = NonEmpty("--ssh-identity-file", v, "a key file");
       }},
      {{"--network-interface"},
       "IF[,IF]",
       "restrict MPI's TCP and NCCL's sockets to these",
       [](LauncherOptions& o, const std::string& v) { o.network_interface = InterfaceNames(v); }},
      {{"--start-timeout"},
       "SECONDS",
       "how long each host may take to answer ssh (30)",
       [](LauncherOptions& o, const std::string& v) {
         o.start_timeout_seconds = PositiveInt("--start-timeout", v, 86400, "30");
       }},
      {{"--host-discovery-script"},
       "SCRIPT",
       "elastic job: SCRIPT prints the available 'host:slots', one per line",
       [](LauncherOptions& o, const std::string& v) {
         o.host_discovery_script = NonEmpty("--host-discovery-script", v, "a program");
       }},
      {{"--min-np"},
       "N",
       "elastic: the fewest ranks to train with (default: -np)",
       [](LauncherOptions& o, const std::string& v) {
         o.min_np = PositiveInt("--min-np", v, 1000000, "2");
       }},
      {{"--max-np"},
       "N",
       "elastic: the most ranks to grow to (default: -np)",
       [](LauncherOptions& o, const std::string& v) {
         o.max_np = PositiveInt("--max-np", v, 1000000, "8");
       }},
      {{"--elastic-timeout"},
       "SECONDS",
       "elastic: how long to wait for --min-np slots (600)",
       [](LauncherOptions& o, const std::string& v) {
         o.elastic_timeout_seconds = PositiveInt("--elastic-timeout", v, 86400 * 7, "600");
       }},
      {{"--reset-limit"},
       "K",
       "elastic: give up after K resets (default: no limit)",
       [](LauncherOptions& o, const std::string& v) {
         auto parsed = ParseNonNegativeInteger(v, 1000000);
         if (!parsed)
           throw UsageError("--reset-limit expects a whole number from 0 to 1000000, got '" + v +
                            "'");
         o.reset_limit = static_cast<int>(*parsed);
       }},
      {{"--blacklist-cooldown-range"},
       "MIN MAX",
       "elastic: a failed host comes back after MIN..MAX s (default: never)",
       [](LauncherOptions& o, const std::string& v) { o.blacklist_cooldown = CooldownRangeOf(v); },
       2},
      {{"--elastic-mode"},
       "restart|in-place|auto",
       "elastic: on a lost rank, restart the generation, or the others go on in place "
       "(Open MPI 5 with ULFM); auto: in place where possible (default)",
       [](LauncherOptions& o, const std::string& v) { o.elastic_mode = ElasticModeOf(v); }},
      {{"--slots-per-host"},
       "S",
       "elastic: slots of a discovered host printed without ':slots' (1)",
       [](LauncherOptions& o, const std::string& v) {
         o.slots_per_host = PositiveInt("--slots-per-host", v, 1000000, "4");
       }},
      {{"--mpi-args"},
       "\"ARGS\"",
       "extra arguments for mpirun, split like a shell; passed on unchecked (trusted)",
       [](LauncherOptions& o, const std::string& v) {
         for (std::string& word : SplitShellWords(v, "--mpi-args")) o.mpi_args.push_back(word);
       }},
      {{"--output-filename"},
       "DIR",
       "also write each rank's output to files under DIR",
       [](LauncherOptions& o, const std::string& v) {
         o.output_dir = NonEmpty("--output-filename", v, "a directory");
       }},
      {{"--tag-output"},
       "",
       "prefix every output line with the rank that wrote it",
       [](LauncherOptions& o, const std::string&) { o.tag_output = true; }},
      {{"--verbose"},
       "",
       "print the ssh checks and the mpirun command",
       [](LauncherOptions& o, const std::string&) { o.verbose = true; }},
      {{"--dry-run"},
       "",
       "print the command and environment, run nothing",
       [](LauncherOptions& o, const std::string&) { o.dry_run = true; }},
      {{"--probe-topology"},
       "FILE",
       "measure the links between the job's hosts into FILE (for HORDE_TOPOLOGY=FILE); "
       "runs no command",
       [](LauncherOptions& o, const std::string& v) {
         o.probe_topology = NonEmpty("--probe-topology", v, "a file name");
       }},
      {{"--check-build"},
       "",
       "print what this build supports",
       [](LauncherOptions& o, const std::string&) { o.check_build = true; }},
      {{"--list-settings"},
       "",
       "print every HORDE_* setting: variable, default, scope, flag, help",
       [](LauncherOptions& o, const std::string&) { o.list_settings = true; }},
      {{"--version"},
       "",
       "print horderun's version",
       [](LauncherOptions& o, const std::string&) { o.show_version = true; }},
      {{"-h", "--help"},
       "",
       "print this help",
       [](LauncherOptions& o, const std::string&) { o.show_help = true; }},
  };
  return specs;
}

// A tuning flag sets its variable; a repeated flag keeps its last value.
void SetTuningVariable(LauncherOptions& options, const Setting& setting, const std::string& value) {
  const std::string name = VariableName(setting);
  const std::string checked = TuningValue(setting, value);
  for (EnvVar& var : options.tuning_env) {
    if (var.name == name) return void(var.value = checked);
  }
  options.tuning_env.push_back({name, checked});
}

OptionSpec TuningSpec(const Setting& setting) {
  return {
      {setting.flag.name},
      setting.flag.value_name,
      setting.help,
      [&setting](LauncherOptions& o, const std::string& v) { SetTuningVariable(o, setting, v); }};
}

std::optional<OptionSpec> FindSpec(const std::string& name) {
  for (const OptionSpec& spec : OptionSpecs()) {
    for (const std::string& candidate : spec.names) {
      if (candidate == name) return spec;
    }
  }
  if (const Setting* setting = FindTuningFlag(name)) return TuningSpec(*setting);
  return std::nullopt;
}

// The elastic flags only make sense together, and the rank counts must be ordered.
void CheckElastic(const LauncherOptions& options) {
  bool elastic_flags = options.min_np || options.max_np || options.reset_limit ||
                       options.blacklist_cooldown;
  if (!options.elastic()) {
    if (elastic_flags) {
      throw UsageError(
          "--min-np, --max-np, --reset-limit and --blacklist-cooldown-range are "
          "for elastic jobs: add --host-discovery-script SCRIPT");
    }
    if (options.elastic_mode) {
      throw UsageError("--elastic-mode is for elastic jobs: add --host-discovery-script SCRIPT");
    }
    return;
  }
  if (!options.hosts.empty() || !options.hostfile.empty()) {
    throw UsageError(
        "--host-discovery-script gives the hosts of an elastic job: drop -H and --hostfile");
  }
  int np = options.num_proc.value_or(options.min_np.value_or(1));
  int min_np = options.min_np.value_or(np), max_np = options.max_np.value_or(std::max(np, min_np));
  if (min_np > np || np > max_np) {
    throw UsageError("elastic rank counts must satisfy --min-np <= -np <= --max-np, got " +
                     std::to_string(min_np) + ", " + std::to_string(np) + ", " +
                     std::to_string(max_np));
  }
}

void CheckComplete(const LauncherOptions& options) {
  if (options.show_help || options.show_version || options.check_build || options.list_settings)
    return;
  if (!options.hosts.empty() && !options.hostfile.empty()) {
    throw UsageError("-H and --hostfile both give hosts: use one of them");
  }
  CheckElastic(options);
  if (!options.probe_topology.empty()) {
    if (!options.command.empty() || options.elastic()) {
      throw UsageError(
          "--probe-topology runs its own measurement: drop the command and "
          "--host-discovery-script, e.g. horderun -H a:1,b:1 --probe-topology links.txt");
    }
    return;
  }
  if (options.command.empty()) {
    throw UsageError(
        "no command to run: put it after the options, e.g. "
        "horderun -np 2 python3 train.py");
  }
}

}  // namespace

LauncherOptions ParseOptions(const std::vector<std::string>& args) {
  LauncherOptions options;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the command starts here
    // "--name=value" for long options; short ones take the next word.
    size_t eq = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
    std::string name = arg.substr(0, eq);
    std::optional<OptionSpec> spec = FindSpec(name);
    if (!spec) throw UsageError("unknown option '" + name + "': see horderun --help");
    if (spec->value_name.empty() && eq != std::string::npos) {
      throw UsageError(name + " takes no value, got '" + arg + "'");
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (!spec->value_name.empty()) {
      if (i + spec->words >= args.size()) {
        throw UsageError(name + " needs a value: " + name + " " + spec->value_name);
      }
      for (int word = 0; word < spec->words; ++word) value += (word ? " " : "") + args[++i];
    }
    spec->apply(options, value);
  }
  options.command.assign(args.begin() + i, args.end());
  CheckComplete(options);
  return options;
}

std::string HelpText() {
  auto describe = [](const OptionSpec& spec) {
    std::string usage;
    for (const std::string& name : spec.names) usage += (usage.empty() ? "" : ", ") + name;
    if (!spec.value_name.empty()) usage += " " + spec.value_name;
    usage.resize(std::max<size_t>(usage.size() + 2, 34), ' ');
    return "  " + usage + spec.help + "\n";
  };
  std::string text =
      "usage: horderun [options] command [args...]\n"
      "Starts a horde job with the installed MPI, e.g.\n"
      "  horderun -np 4 python3 train.py\n"
      "  horderun -np 8 -H node1:4,node2:4 python3 train.py\n"
      "Inside a Slurm allocation the hosts come from Slurm.\n\noptions:\n";
  for (const OptionSpec& spec : OptionSpecs()) text += describe(spec);
  text += "\ntuning (each sets a HORDE_* variable for every rank):\n";
  for (const Setting* setting : TuningFlags()) text += describe(TuningSpec(*setting));
  return text;
}

}  // namespace horde::launcher

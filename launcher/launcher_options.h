#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/elastic_hosts.h"
#include "launcher/elastic_mode.h"
#include "launcher/environment.h"
#include "launcher/host_list.h"

namespace horde::launcher {

// What the user asked for on the command line, checked for form but not yet against the
// machine (hostfiles are read, hosts counted and MPI found later).
struct LauncherOptions {
  std::optional<int> num_proc;
  std::vector<Host> hosts;  // from -H; empty when not given
  std::string hostfile;
  std::optional<int> ssh_port;
  std::string ssh_identity_file;
  std::string network_interface;  // one name or a comma-separated list
  int start_timeout_seconds = 30;
  std::vector<EnvVar> tuning_env;  // HORDE_* from the tuning flags, in flag order
  std::vector<std::string> mpi_args;
  std::string output_dir;
  bool tag_output = false;
  bool verbose = false;
  bool dry_run = false;
  bool check_build = false;
  bool show_version = false;
  bool show_help = false;
  bool list_settings = false;  // --list-settings: print the settings table
  // --probe-topology FILE: the job measures its links into FILE instead of running a
  // command (the command becomes horde-topology probe, beside horderun).
  std::string probe_topology;
  std::vector<std::string> command;
  // Elastic jobs (see elastic_supervisor.h): on when a discovery script is given.
  std::string host_discovery_script;  // absolute once MakeElasticSpec has run
  std::optional<int> min_np;
  std::optional<int> max_np;
  int elastic_timeout_seconds = 600;
  std::optional<int> reset_limit;
  int slots_per_host = 1;
  std::optional<CooldownRange> blacklist_cooldown;  // none: a failed host stays out
  std::optional<ElasticMode> elastic_mode;          // none: auto
  bool elastic() const { return !host_discovery_script.empty(); }
};

// Parses the arguments after the program name. Options end at the first word that is
// not one (or after "--"); the rest is the command. Throws UsageError.
LauncherOptions ParseOptions(const std::vector<std::string>& args);

std::string HelpText();

}  // namespace horde::launcher

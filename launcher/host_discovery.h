#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "launcher/child_process.h"
#include "launcher/host_list.h"

namespace horde::launcher {

// Elastic jobs learn their hosts from a discovery script that horderun runs every few
// seconds. Its output is untrusted data: every name goes through CheckHostName.

// A discovery script that failed, timed out or printed something that is not a host
// list: one line. The supervisor gives up on the first run's; later ones are retried.
class DiscoveryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses the script's output: one "host" or "host:slots" per line ("[v6]:slots" for
// IPv6); a host alone gets `default_slots`; blank lines are skipped. An empty list is
// valid (no host available right now). Throws DiscoveryError naming the line, e.g.
//   host discovery script ./hosts.sh, line 3: expected 'host' or 'host:slots', got 'a b'
std::vector<Host> ParseDiscoveryOutput(const std::string& output, const std::string& script,
                                       int default_slots);

// Throws DiscoveryError unless `script` is an executable file: it is run directly (not
// through a shell, not searched on PATH).
void CheckDiscoveryScript(const std::string& script);

// The hosts a finished run of the script printed on stdout (its stderr is for the log).
// Throws DiscoveryError when it exited non-zero or outlived `timeout`.
std::vector<Host> HostsOfRun(const CapturedRun& run, const std::string& script, int default_slots,
                             std::chrono::milliseconds timeout);

// Runs the script (a path, no arguments) and returns HostsOfRun.
std::vector<Host> DiscoverHosts(const std::string& script, int default_slots,
                                std::chrono::milliseconds timeout);

}  // namespace horde::launcher

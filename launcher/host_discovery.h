#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "launcher/host_list.h"

namespace horde::launcher {

// Elastic jobs learn their hosts from a discovery script that horderun runs every few
// seconds. Its output is untrusted data: every name goes through CheckHostName.

// A discovery script that failed, timed out or printed something that is not a host
// list. The supervisor stops the job with this message (one line) and a non-zero exit.
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

// Runs the script (a path, no arguments) and parses what it prints on stdout and
// stderr. Throws DiscoveryError when it cannot run, exits non-zero or outlives `timeout`.
std::vector<Host> DiscoverHosts(const std::string& script, int default_slots,
                                std::chrono::milliseconds timeout);

}  // namespace horde::launcher

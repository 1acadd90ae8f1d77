#include "launcher/host_discovery.h"

#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <sstream>
#include <system_error>

#include "launcher/host_name.h"
#include "launcher/numbers.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

constexpr size_t kMaxOutputBytes = 1 << 20;  // a million bytes of host names is garbage
constexpr size_t kMaxHosts = 100000;

std::string Where(const std::string& script, int line) {
  return "host discovery script " + script + ", line " + std::to_string(line);
}

Host ParseLine(const std::string& line, const std::string& where, int default_slots) {
  size_t colon = SlotsColon(line);
  Host host{line.substr(0, colon), default_slots};
  if (colon != std::string::npos) {
    auto slots = ParseNonNegativeInteger(line.substr(colon + 1), 1000000);
    if (!slots || *slots == 0) {
      throw DiscoveryError(where +
                           ": expected 'host' or 'host:slots' with slots from 1 to "
                           "1000000, got " +
                           QuotedForMessage(line));
    }
    host.slots = static_cast<int>(*slots);
  }
  try {
    CheckHostName(host.name, where);
  } catch (const UsageError& error) {
    throw DiscoveryError(error.what());
  }
  return host;
}

}  // namespace

// Says so when the script cannot be run, rather than report exec's exit code 127.
void CheckDiscoveryScript(const std::string& script) {
  struct stat info;
  if (stat(script.c_str(), &info) != 0) {
    throw DiscoveryError("host discovery script " + script +
                         " does not exist: expected the path of an executable that prints "
                         "'host:slots' lines");
  }
  if (!S_ISREG(info.st_mode) || access(script.c_str(), X_OK) != 0) {
    throw DiscoveryError("host discovery script " + script +
                         " is not an executable file: make it one (chmod +x) with a '#!' "
                         "first line");
  }
}

std::vector<Host> ParseDiscoveryOutput(const std::string& output, const std::string& script,
                                       int default_slots) {
  if (output.size() > kMaxOutputBytes) {
    throw DiscoveryError("host discovery script " + script + " printed " +
                         std::to_string(output.size()) + " bytes: expected 'host:slots' lines");
  }
  std::vector<Host> hosts;
  std::set<std::string> seen;
  std::stringstream lines(output);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos) continue;
    line = line.substr(begin, line.find_last_not_of(" \t") + 1 - begin);
    Host host = ParseLine(line, Where(script, number), default_slots);
    if (!seen.insert(host.name).second) {
      throw DiscoveryError(Where(script, number) + ": host " + QuotedForMessage(host.name) +
                           " is listed twice: expected each host once, with its slots");
    }
    if (hosts.size() == kMaxHosts) {
      throw DiscoveryError(Where(script, number) + ": more than 100000 hosts");
    }
    hosts.push_back(host);
  }
  return hosts;
}

std::vector<Host> HostsOfRun(const CapturedRun& run, const std::string& script, int default_slots,
                             std::chrono::milliseconds timeout) {
  if (run.timed_out) {
    throw DiscoveryError("host discovery script " + script + " did not finish within " +
                         std::to_string(timeout.count() / 1000) +
                         " s: it must print the "
                         "available hosts and exit");
  }
  if (run.exit_code != 0) {
    std::string last = LastLine(run.error_output);
    if (last.empty()) last = LastLine(run.output);
    throw DiscoveryError("host discovery script " + script + " failed with exit code " +
                         std::to_string(run.exit_code) +
                         (last.empty() ? "" : ": " + QuotedForMessage(last)));
  }
  return ParseDiscoveryOutput(run.output, script, default_slots);
}

std::vector<Host> DiscoverHosts(const std::string& script, int default_slots,
                                std::chrono::milliseconds timeout) {
  CheckDiscoveryScript(script);
  CapturedRun run;
  try {
    run = RunCaptured({script}, timeout, /*stderr_apart=*/true);
  } catch (const std::system_error& error) {
    throw DiscoveryError("host discovery script " + script + " could not run: " + error.what());
  }
  return HostsOfRun(run, script, default_slots, timeout);
}

}  // namespace horde::launcher

#include "launcher/host_list.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "launcher/host_name.h"
#include "launcher/numbers.h"
#include "launcher/usage_error.h"

namespace horde::launcher {
namespace {

// A slot count: 1 to 1,000,000 (more is a typo, not a machine).
bool ParseSlots(const std::string& text, int* slots) {
  auto value = ParseNonNegativeInteger(text, 1000000);
  if (!value || *value == 0) return false;
  *slots = static_cast<int>(*value);
  return true;
}

Host ParseHostEntry(const std::string& entry) {
  static const std::string kFix = ": write host:slots, e.g. -H node1:4,node2:4";
  size_t colon = SlotsColon(entry);
  Host host{entry.substr(0, colon), 1};
  if (host.name.empty())
    throw UsageError("-H: " + QuotedForMessage(entry) + " has no host name" + kFix);
  CheckHostName(host.name, "-H");
  if (colon != std::string::npos && !ParseSlots(entry.substr(colon + 1), &host.slots)) {
    throw UsageError("-H: " + QuotedForMessage(entry) + " has slots " +
                     QuotedForMessage(entry.substr(colon + 1)) + ", expected a positive integer" +
                     kFix);
  }
  return host;
}

std::string StripComment(const std::string& line) { return line.substr(0, line.find('#')); }

}  // namespace

std::vector<Host> ParseHostList(const std::string& text) {
  std::vector<Host> hosts;
  std::stringstream stream(text);
  std::string entry;
  while (std::getline(stream, entry, ',')) hosts.push_back(ParseHostEntry(entry));
  if (hosts.empty() || text.back() == ',') {
    throw UsageError("-H: '" + text + "' has an empty entry: write host:slots, e.g. -H node1:4");
  }
  RejectDuplicateHosts(hosts, "-H");
  return hosts;
}

std::vector<Host> ParseHostfile(const std::string& contents, const std::string& path) {
  std::vector<Host> hosts;
  std::stringstream lines(contents);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::stringstream words(StripComment(line));
    Host host;
    std::string slots_word, extra;
    if (!(words >> host.name)) continue;  // blank or comment only
    bool slots_ok = !(words >> slots_word) || (slots_word.rfind("slots=", 0) == 0 &&
                                               ParseSlots(slots_word.substr(6), &host.slots));
    const std::string where = "--hostfile " + path + ":" + std::to_string(number);
    CheckHostName(host.name, where);
    if (!slots_ok || (words >> extra)) {
      throw UsageError(where + ": expected 'host slots=N', got " + QuotedForMessage(line));
    }
    hosts.push_back(host);
  }
  if (hosts.empty()) {
    throw UsageError("--hostfile " + path + " lists no hosts: add lines like 'node1 slots=4'");
  }
  RejectDuplicateHosts(hosts, "--hostfile " + path);
  return hosts;
}

std::vector<Host> ReadHostfile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    throw UsageError("--hostfile: cannot read '" + path + "': " + std::strerror(errno));
  }
  std::stringstream contents;
  contents << file.rdbuf();
  return ParseHostfile(contents.str(), path);
}

void RejectDuplicateHosts(const std::vector<Host>& hosts, const std::string& where) {
  std::set<std::string> seen;
  for (const Host& host : hosts) {
    if (!seen.insert(host.name).second) {
      throw UsageError(where + ": host '" + host.name +
                       "' is listed twice: list it once with the sum of its slots");
    }
  }
}

int TotalSlots(const std::vector<Host>& hosts) {
  int total = 0;
  for (const Host& host : hosts) total += host.slots;
  return total;
}

std::string FormatHostList(const std::vector<Host>& hosts) {
  std::string text;
  for (const Host& host : hosts) {
    if (!text.empty()) text += ',';
    text += host.name + ":" + std::to_string(host.slots);
  }
  return text;
}

bool IsLocalHost(const std::string& name, const std::string& own_hostname,
                 const std::vector<std::string>& own_addresses) {
  std::string own_short = own_hostname.substr(0, own_hostname.find('.'));
  return name == "localhost" || name == "localhost.localdomain" || name == "::1" ||
         name.rfind("127.", 0) == 0 || name == own_hostname || name == own_short ||
         std::find(own_addresses.begin(), own_addresses.end(), name) != own_addresses.end();
}

}  // namespace horde::launcher

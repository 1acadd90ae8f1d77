#pragma once

#include <string>
#include <vector>

namespace horde::launcher {

// One machine of the job and how many ranks it may run.
struct Host {
  std::string name;
  int slots = 1;
  bool operator==(const Host& other) const { return name == other.name && slots == other.slots; }
};

// Parses -H's "host:slots,host:slots" ("host" alone means one slot). Throws UsageError.
std::vector<Host> ParseHostList(const std::string& text);

// Parses hostfile text: one "host slots=N" (or just "host") per line; '#' starts a
// comment; blank lines are skipped. `path` only names the file in errors.
std::vector<Host> ParseHostfile(const std::string& contents, const std::string& path);

// Reads and parses a hostfile. Throws UsageError when it cannot be read.
std::vector<Host> ReadHostfile(const std::string& path);

// Throws UsageError when a host appears twice; `where` names the list in the message.
void RejectDuplicateHosts(const std::vector<Host>& hosts, const std::string& where);

int TotalSlots(const std::vector<Host>& hosts);

// "a:2,b:2", the form -H takes.
std::string FormatHostList(const std::vector<Host>& hosts);

// Whether `name` is this machine: localhost, a loopback address, its own hostname (full
// or short form) or one of its own addresses. Names are not resolved: a DNS lookup may
// hang, and a name that is this machine under another alias costs only an ssh check.
bool IsLocalHost(const std::string& name, const std::string& own_hostname,
                 const std::vector<std::string>& own_addresses);

}  // namespace horde::launcher

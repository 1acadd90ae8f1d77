#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace horde::launcher {

// Host names are data: they reach ssh and mpirun as arguments, so one that could be read
// as an option ("-oProxyCommand=...") or that a shell could interpret must never get
// there. Every source of host names (-H, hostfiles, Slurm, elastic discovery output)
// checks each name with these before anything runs.
//
// Allowed: a DNS name (RFC 1123: labels of letters, digits and '-', 1 to 63 characters,
// not starting or ending with '-', separated by '.', at most 253 characters in all), an
// IPv4 address (a.b.c.d), or an IPv6 address in brackets ([fe80::1]). Not allowed: a
// zone index ([fe80::1%eth0]: mpirun and ssh disagree on it; use the interface's
// global address or --network-interface), and anything else.

// Why `name` is not an allowed host name; nullopt when it is.
std::optional<std::string> HostNameProblem(const std::string& name);

// Throws UsageError when `name` is not allowed, e.g.
//   hosts.txt:3: host name '-oProxyCommand=x' is not allowed: it starts with '-'; expected ...
// `source` names where the name came from (an option, "file:line", a variable).
void CheckHostName(const std::string& name, const std::string& source);

// `name` quoted for a message, with control characters shown as escapes, so that a name
// holding a newline cannot forge a line of output.
std::string QuotedForMessage(const std::string& name);

// Where the ":slots" of a "host:slots" entry starts (npos: none). An IPv6 address keeps
// its colons inside brackets: "[fe80::1]:4".
size_t SlotsColon(const std::string& entry);

}  // namespace horde::launcher

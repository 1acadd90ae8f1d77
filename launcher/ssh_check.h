#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/child_process.h"
#include "launcher/ssh_options.h"

namespace horde::launcher {

struct SshFailure {
  std::string host;
  std::string reason;  // ssh's own last line, or that it did not answer in time
};

// Runs `ssh -o BatchMode=yes -o ConnectTimeout=T [-p P] [-i F] HOST true` for all hosts
// in parallel, each with `timeout_seconds`, and returns the hosts that failed in their
// given order. BatchMode makes a password prompt or an unknown host key fail instead of
// waiting for a user. `ssh_program` is the path of ssh.
std::vector<SshFailure> CheckSshReachability(const std::vector<std::string>& hosts,
                                             const SshOptions& ssh, int timeout_seconds,
                                             const std::string& ssh_program);

// Runs `ssh -o BatchMode=yes -o ConnectTimeout=T [-p P] [-i F] -- HOST REMOTE...` for all
// hosts in parallel, each with `timeout_seconds`, and returns the hosts where it failed
// (could not connect, or REMOTE exited non-zero) in their given order. ssh joins the
// REMOTE words into one shell command on the host: quote them (QuoteShellWord).
std::vector<SshFailure> RunOverSsh(const std::vector<std::string>& hosts, const SshOptions& ssh,
                                   int timeout_seconds, const std::string& ssh_program,
                                   const std::vector<std::string>& remote);

// The reachability check's command for one host: ssh's options, then "--", then the
// host and the remote command, so the host is never read as an option.
std::vector<std::string> SshCheckArgv(const std::string& host, const SshOptions& ssh,
                                      int timeout_seconds, const std::string& ssh_program);

// The failure, if any, of a finished ssh run to `host` (from RunOverSsh's command).
std::optional<SshFailure> SshFailureOf(const std::string& host, const CapturedRun& run,
                                       int timeout_seconds);

// One line naming the host, why, and what to do about it.
std::string DescribeSshFailure(const SshFailure& failure, const SshOptions& ssh);

}  // namespace horde::launcher

#pragma once

#include <optional>
#include <string>
#include <vector>

namespace horde::launcher {

// How to reach the remote hosts, for the reachability check and for mpirun's own ssh.
struct SshOptions {
  std::optional<int> port;
  std::string identity_file;
};

// "-p PORT -i FILE" as ssh takes them; empty when neither is set.
std::vector<std::string> SshOptionArgs(const SshOptions& ssh);

// The same as one space-separated string, for MPIs that take them so and split at
// spaces. Throws UsageError for a key path with a space.
std::string SshOptionString(const SshOptions& ssh);

}  // namespace horde::launcher

#include "launcher/ssh_options.h"

#include "launcher/usage_error.h"

namespace horde::launcher {

std::vector<std::string> SshOptionArgs(const SshOptions& ssh) {
  std::vector<std::string> args;
  if (ssh.port) args.insert(args.end(), {"-p", std::to_string(*ssh.port)});
  if (!ssh.identity_file.empty()) args.insert(args.end(), {"-i", ssh.identity_file});
  return args;
}

std::string SshOptionString(const SshOptions& ssh) {
  if (ssh.identity_file.find(' ') != std::string::npos) {
    throw UsageError("--ssh-identity-file '" + ssh.identity_file +
                     "' contains a space, which "
                     "mpirun cannot pass to ssh: use a key path without spaces");
  }
  std::string text;
  for (const std::string& word : SshOptionArgs(ssh)) text += (text.empty() ? "" : " ") + word;
  return text;
}

}  // namespace horde::launcher

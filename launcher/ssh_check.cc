#include "launcher/ssh_check.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <system_error>
#include <thread>

#include "launcher/child_process.h"
#include "launcher/shell_words.h"

namespace horde::launcher {
namespace {

// Enough to check a large cluster quickly without running thousands of ssh at once.
constexpr size_t kMaxParallel = 64;

std::vector<std::string> SshArgv(const std::string& host, const SshOptions& ssh,
                                 int timeout_seconds, const std::string& ssh_program,
                                 const std::vector<std::string>& remote) {
  std::vector<std::string> argv = {ssh_program, "-o", "BatchMode=yes", "-o",
                                   "ConnectTimeout=" + std::to_string(timeout_seconds)};
  for (const std::string& arg : SshOptionArgs(ssh)) argv.push_back(arg);
  argv.insert(argv.end(), {"--", host});
  argv.insert(argv.end(), remote.begin(), remote.end());
  return argv;
}

std::optional<SshFailure> RunOnHost(const std::string& host, const SshOptions& ssh,
                                    int timeout_seconds, const std::string& ssh_program,
                                    const std::vector<std::string>& remote) {
  try {
    return SshFailureOf(host,
                        RunCaptured(SshArgv(host, ssh, timeout_seconds, ssh_program, remote),
                                    std::chrono::seconds(timeout_seconds)),
                        timeout_seconds);
  } catch (const std::system_error& error) {
    return SshFailure{host, std::string("cannot run ssh: ") + error.what()};
  }
}

}  // namespace

std::optional<SshFailure> SshFailureOf(const std::string& host, const CapturedRun& run,
                                       int timeout_seconds) {
  if (run.timed_out) {
    return SshFailure{host, "no answer within " + std::to_string(timeout_seconds) + " s"};
  }
  if (run.exit_code == 0) return std::nullopt;
  std::string reason = LastLine(run.output);
  if (reason.empty()) reason = "ssh exited with code " + std::to_string(run.exit_code);
  return SshFailure{host, reason};
}

std::vector<std::string> SshCheckArgv(const std::string& host, const SshOptions& ssh,
                                      int timeout_seconds, const std::string& ssh_program) {
  return SshArgv(host, ssh, timeout_seconds, ssh_program, {"true"});
}

std::vector<SshFailure> CheckSshReachability(const std::vector<std::string>& hosts,
                                             const SshOptions& ssh, int timeout_seconds,
                                             const std::string& ssh_program) {
  return RunOverSsh(hosts, ssh, timeout_seconds, ssh_program, {"true"});
}

std::vector<SshFailure> RunOverSsh(const std::vector<std::string>& hosts, const SshOptions& ssh,
                                   int timeout_seconds, const std::string& ssh_program,
                                   const std::vector<std::string>& remote) {
  std::vector<std::optional<SshFailure>> results(hosts.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < hosts.size(); i = next++) {
      results[i] = RunOnHost(hosts[i], ssh, timeout_seconds, ssh_program, remote);
    }
  };
  std::vector<std::thread> workers;
  for (size_t i = 0; i < std::min(hosts.size(), kMaxParallel); ++i) workers.emplace_back(worker);
  for (std::thread& thread : workers) thread.join();
  std::vector<SshFailure> failures;
  for (auto& result : results) {
    if (result) failures.push_back(*result);
  }
  return failures;
}

std::string DescribeSshFailure(const SshFailure& failure, const SshOptions& ssh) {
  std::vector<std::string> command = {"ssh"};
  for (const std::string& arg : SshOptionArgs(ssh)) command.push_back(arg);
  command.insert(command.end(), {"--", failure.host, "true"});
  // The host names here passed CheckHostName: nothing in them needs quoting.
  return "cannot reach " + failure.host + " over ssh (" + failure.reason + "): make `" +
         JoinShellWords(command) + "` work from here without a password, or leave " + failure.host +
         " out";
}

}  // namespace horde::launcher

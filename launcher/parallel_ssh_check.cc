#include "launcher/parallel_ssh_check.h"

#include <system_error>
#include <utility>

#include "launcher/ssh_check.h"

namespace horde::launcher {

ParallelSshCheck::ParallelSshCheck(SshOptions ssh, int timeout_seconds, std::string ssh_program)
    : ssh_(std::move(ssh)),
      timeout_seconds_(timeout_seconds),
      ssh_program_(std::move(ssh_program)) {}

void ParallelSshCheck::Start(const std::vector<std::string>& hosts) {
  active_ = true;
  waiting_.insert(waiting_.end(), hosts.begin(), hosts.end());
}

void ParallelSshCheck::Fail(const std::string& host, const std::string& reason) {
  failures_.push_back({host, DescribeSshFailure(SshFailure{host, reason}, ssh_)});
}

std::optional<std::vector<SshCheckFailure>> ParallelSshCheck::Poll() {
  if (!active_) return std::nullopt;
  while (!waiting_.empty() && running_.size() < kMaxParallel) {
    std::string host = waiting_.front();
    waiting_.pop_front();
    if (ssh_program_.empty()) {
      Fail(host, "ssh not found on PATH");
      continue;
    }
    try {
      running_.push_back({host, std::make_unique<CapturedChild>(
                                    SshCheckArgv(host, ssh_, timeout_seconds_, ssh_program_),
                                    std::chrono::seconds(timeout_seconds_))});
    } catch (const std::system_error& error) {
      Fail(host, std::string("cannot run ssh: ") + error.what());
    }
  }
  for (auto check = running_.begin(); check != running_.end();) {
    if (!check->child->Poll(std::chrono::milliseconds(0))) {
      ++check;
      continue;
    }
    if (auto failure = SshFailureOf(check->host, check->child->run(), timeout_seconds_)) {
      Fail(failure->host, failure->reason);
    }
    check = running_.erase(check);
  }
  if (!waiting_.empty() || !running_.empty()) return std::nullopt;
  active_ = false;
  return std::exchange(failures_, {});
}

}  // namespace horde::launcher

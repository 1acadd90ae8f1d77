#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "launcher/child_process.h"
#include "launcher/elastic_services.h"
#include "launcher/ssh_options.h"

namespace horde::launcher {

// ssh_check.h's reachability check as an SshChecker: one child per host, up to
// kMaxParallel at once, polled by the loop; each fails after `timeout_seconds`.
class ParallelSshCheck : public SshChecker {
 public:
  static constexpr size_t kMaxParallel = 64;

  ParallelSshCheck(SshOptions ssh, int timeout_seconds, std::string ssh_program);
  void Start(const std::vector<std::string>& hosts) override;
  std::optional<std::vector<SshCheckFailure>> Poll() override;

 private:
  struct Check {
    std::string host;
    std::unique_ptr<CapturedChild> child;
  };
  void Fail(const std::string& host, const std::string& reason);

  SshOptions ssh_;
  int timeout_seconds_;
  std::string ssh_program_;
  bool active_ = false;
  std::deque<std::string> waiting_;
  std::vector<Check> running_;
  std::vector<SshCheckFailure> failures_;
};

}  // namespace horde::launcher

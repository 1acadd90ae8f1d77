// The elastic policy's tests drive it event by event on a fake clock: the fixture.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/elastic_policy.h"

namespace horde::launcher {

inline DiscoveryResult Found(std::vector<Host> hosts, std::vector<std::string> stderr_lines = {}) {
  DiscoveryResult result;
  result.hosts = std::move(hosts);
  result.stderr_lines = std::move(stderr_lines);
  return result;
}

inline DiscoveryResult Failed(const std::string& error) {
  DiscoveryResult result;
  result.error = error;
  return result;
}

inline GenerationEnd Ended(int exit_code) {
  GenerationEnd end;
  end.exit_code = exit_code;
  return end;
}

class ElasticPolicyTest : public testing::Test {
 protected:
  ElasticPolicyTest() { settings_.script = "./d.sh"; }

  ElasticPolicy& Policy(int min_np, int max_np) {
    settings_.min_np = min_np;
    settings_.max_np = max_np;
    policy_.emplace(settings_, HostPool("vm", {"10.0.0.1"}), now_);
    return *policy_;
  }
  ElasticAction Keep(ElasticAction action) {
    lines_.insert(lines_.end(), action.lines.begin(), action.lines.end());
    return action;
  }
  ElasticAction Tick() { return Keep(policy_->OnTick(now_)); }
  ElasticAction Discover(const DiscoveryResult& result) {
    EXPECT_TRUE(Tick().discover);
    ElasticAction action = Keep(policy_->OnDiscovery(result, now_));
    now_ += ElasticPolicy::kDiscoveryInterval;
    return action;
  }
  ElasticAction End(const GenerationEnd& end) { return Keep(policy_->OnGenerationEnd(end, now_)); }
  std::string Last() const { return lines_.empty() ? "" : lines_.back(); }

  ElasticSettings settings_;
  ElasticTime now_ = ElasticTime() + std::chrono::hours(1);
  std::optional<ElasticPolicy> policy_;
  std::vector<std::string> lines_;
};

}  // namespace horde::launcher

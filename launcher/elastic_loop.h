#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "launcher/elastic_policy.h"
#include "launcher/elastic_services.h"

namespace horde::launcher {

struct ElasticParts {
  HostDiscovery& discovery;
  SshChecker& ssh;
  GenerationRunner& generation;
  StopSignals& signals;
  std::function<void(const std::string&)> print;  // one line of the policy's
};

// The supervisor's loop: every kTick at most it takes a stop signal, watches the running
// generation (the failures its ranks report as they come, its end), and collects what
// discovery and ssh checks have finished, feeding each to `policy` and doing what it
// says. Nothing in it blocks but the wait for output or signals, and a generation's stop.
// Returns the exit code.
int RunElasticLoop(ElasticPolicy& policy, const ElasticParts& parts);

inline constexpr auto kTick = std::chrono::milliseconds(100);

}  // namespace horde::launcher

#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "launcher/child_process.h"
#include "launcher/elastic_services.h"

namespace horde::launcher {

// The discovery script as a HostDiscovery: each Start() runs it once as a child that
// the loop polls, within `timeout` (host_discovery.h reads what it prints).
class ScriptDiscovery : public HostDiscovery {
 public:
  ScriptDiscovery(std::string script, int default_slots, std::chrono::milliseconds timeout);
  void Start() override;
  std::optional<DiscoveryResult> Poll() override;

 private:
  std::string script_;
  int default_slots_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<CapturedChild> child_;
  std::optional<DiscoveryResult> failed_to_start_;
};

}  // namespace horde::launcher

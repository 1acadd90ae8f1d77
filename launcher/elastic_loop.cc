#include "launcher/elastic_loop.h"

#include <optional>

namespace horde::launcher {

int RunElasticLoop(ElasticPolicy& policy, const ElasticParts& parts) {
  bool running = false;
  std::optional<int> code;
  auto apply = [&](const ElasticAction& action) {
    for (const std::string& line : action.lines) parts.print(line);
    if (action.discover) parts.discovery.Start();
    if (!action.check_ssh.empty()) parts.ssh.Start(action.check_ssh);
    if (action.start) {
      parts.generation.Start(*action.start);
      running = true;
    }
    if (action.send_host_update) parts.generation.SendHostUpdate();
    if (action.stop_generation) parts.generation.Stop(*action.stop_generation);
    if (action.exit_code) code = action.exit_code;
  };
  while (!code) {
    apply(policy.OnTick(parts.signals.Now()));
    if (code) break;
    if (int signal = parts.signals.Take(running ? std::chrono::milliseconds(0) : kTick)) {
      apply(policy.OnStopSignal(signal, parts.signals.Now()));
      continue;
    }
    if (running) {
      std::optional<GenerationEnd> end = parts.generation.Poll(kTick);
      // Before its end, so that the end does not blame a failure handled in place.
      for (const RankEnd& failed : parts.generation.TakeRankFailures()) {
        apply(policy.OnRankFailed(failed, parts.signals.Now()));
      }
      if (code) break;
      if (end) {
        running = false;
        apply(policy.OnGenerationEnd(*end, parts.signals.Now()));
        continue;
      }
    }
    if (auto result = parts.discovery.Poll())
      apply(policy.OnDiscovery(*result, parts.signals.Now()));
    if (code) break;
    if (auto failures = parts.ssh.Poll())
      apply(policy.OnSshChecked(*failures, parts.signals.Now()));
  }
  return *code;
}

}  // namespace horde::launcher

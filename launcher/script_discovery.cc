#include "launcher/script_discovery.h"

#include <sstream>
#include <system_error>
#include <utility>

#include "launcher/host_discovery.h"

namespace horde::launcher {
namespace {

std::vector<std::string> NonEmptyLines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

DiscoveryResult Failure(const std::string& error) {
  DiscoveryResult result;
  result.error = error;
  return result;
}

}  // namespace

ScriptDiscovery::ScriptDiscovery(std::string script, int default_slots,
                                 std::chrono::milliseconds timeout)
    : script_(std::move(script)), default_slots_(default_slots), timeout_(timeout) {}

void ScriptDiscovery::Start() {
  try {
    CheckDiscoveryScript(script_);
    child_ = std::make_unique<CapturedChild>(std::vector<std::string>{script_}, timeout_,
                                             /*stderr_apart=*/true);
  } catch (const DiscoveryError& error) {
    failed_to_start_ = Failure(error.what());
  } catch (const std::system_error& error) {
    failed_to_start_ = Failure("host discovery script " + script_ +
                               " could not run: " + error.what());
  }
}

std::optional<DiscoveryResult> ScriptDiscovery::Poll() {
  if (failed_to_start_) return std::exchange(failed_to_start_, std::nullopt);
  if (!child_ || !child_->Poll(std::chrono::milliseconds(0))) return std::nullopt;
  DiscoveryResult result;
  result.stderr_lines = NonEmptyLines(child_->run().error_output);
  try {
    result.hosts = HostsOfRun(child_->run(), script_, default_slots_, timeout_);
  } catch (const DiscoveryError& error) {
    result.error = error.what();
  }
  child_.reset();
  return result;
}

}  // namespace horde::launcher

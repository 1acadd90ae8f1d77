#include "core/api.h"

#include <mutex>

#include "core/logging.h"

namespace horde {
namespace {

std::mutex g_mu;
std::shared_ptr<Runtime> g_runtime;

}  // namespace

Status InitRuntime(const RuntimeFactory& factory) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_runtime && !g_runtime->stopped()) return Status::Ok();
  // A runtime whose loop ended because another rank shut down is replaced, so every
  // rank can init() again together.
  if (g_runtime) {
    g_runtime->Shutdown();
    g_runtime.reset();
  }
  Config config;
  HORDE_RETURN_IF_ERROR(Config::FromEnv(ProcessEnv(), &config));
  SetLogLevel(config.log_level);
  std::unique_ptr<Runtime> runtime;
  HORDE_RETURN_IF_ERROR(factory(config, &runtime));
  SetLogRank(runtime->topology().rank);
  Status log_opened = runtime->OpenAutotuneLog();
  if (!log_opened.ok()) {
    runtime->Shutdown();
    return Status::InvalidArgument("HORDE_AUTOTUNE_LOG: " + log_opened.message());
  }
  if (!config.timeline_path.empty() && config.timeline_path != "DYNAMIC") {
    Status started = runtime->StartTimeline(config.timeline_path, config.timeline_mark_cycles);
    if (!started.ok()) {
      runtime->Shutdown();
      return Status::InvalidArgument("HORDE_TIMELINE: " + started.message());
    }
  }
  g_runtime = std::move(runtime);
  return Status::Ok();
}

void ShutdownRuntime() {
  std::shared_ptr<Runtime> runtime;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    runtime.swap(g_runtime);
  }
  if (runtime) runtime->Shutdown();
}

std::shared_ptr<Runtime> CurrentRuntime() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_runtime;
}

}  // namespace horde

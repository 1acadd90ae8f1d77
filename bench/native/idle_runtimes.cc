// Extra idle runtimes over every rank, each with its background thread, as a process set
// of all ranks would have: what horde's one-runtime-per-process-set design costs while
// the sets sit idle. Public API cannot register them (add_process_set refuses a second
// set of the same ranks), so this builds them as add_process_set does
// (mpi::MakeProcessSetRuntime with gpu::GpuDeviceOps), from the source tree's headers.
#include <cstdio>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/runtime.h"
#include "gpu_ops/device_ops.h"
#include "mpi_ops/make_runtime.h"

namespace {

std::vector<std::unique_ptr<horde::Runtime>> runtimes;

}  // namespace

extern "C" {

// Collective: starts `count` runtimes over ranks 0..size-1. Returns 0, or -1 after
// printing the error.
int idle_runtimes_start(int size, int count) {
  horde::Config config;
  horde::Status status = horde::Config::FromEnv(horde::ProcessEnv(), &config);
  config.autotune = false;  // as add_process_set's sets: only the global set tunes
  config.timeline_path.clear();
  std::vector<int> ranks(size);
  std::iota(ranks.begin(), ranks.end(), 0);
  for (int i = 0; status.ok() && i < count; ++i) {
    std::unique_ptr<horde::Runtime> runtime;
    status = horde::mpi::MakeProcessSetRuntime(config, ranks, horde::gpu::GpuDeviceOps(), &runtime);
    if (status.ok()) runtimes.push_back(std::move(runtime));
  }
  if (!status.ok()) {
    std::fprintf(stderr, "idle_runtimes_start: %s\n", status.message().c_str());
    return -1;
  }
  return 0;
}

// Collective: shuts the runtimes down (each leaves its loop together with its peers).
void idle_runtimes_stop() {
  for (auto& runtime : runtimes) runtime->Shutdown();
  runtimes.clear();
}

}  // extern "C"

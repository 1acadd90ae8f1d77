// horde::init() and the job's topology, over torch_ops (shared with Python).
#include "horde/basics.h"

#include <cstdlib>
#include <mutex>

#include "torch_plugin/torch_ops.h"

namespace horde {
namespace {

void ShutdownAtExit() { torch_ops::Shutdown(); }

// Registered after MPI's own exit handler, so it runs first: the runtime stops before
// MPI is finalized, even in a program that forgot shutdown().
void ShutdownAtExitOnce() {
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit(ShutdownAtExit); });
}

}  // namespace

void init() {
  torch_ops::Init();
  ShutdownAtExitOnce();
}

std::vector<ProcessSet> init(const std::vector<std::vector<int>>& process_sets) {
  const std::vector<int32_t> ids = torch_ops::Init(process_sets);
  ShutdownAtExitOnce();
  const int world_rank = rank();
  std::vector<ProcessSet> sets;
  for (size_t i = 0; i < ids.size(); ++i) {
    sets.push_back(detail::MakeProcessSet(ids[i], process_sets[i], world_rank));
  }
  return sets;
}

void shutdown() { torch_ops::Shutdown(); }

bool is_initialized() { return torch_ops::IsInitialized(); }

int size() { return torch_ops::CurrentTopology().size; }
int rank() { return torch_ops::CurrentTopology().rank; }
int local_size() { return torch_ops::CurrentTopology().local_size; }
int local_rank() { return torch_ops::CurrentTopology().local_rank; }
int cross_size() { return torch_ops::CurrentTopology().cross_size; }
int cross_rank() { return torch_ops::CurrentTopology().cross_rank; }
bool is_homogeneous() { return torch_ops::CurrentTopology().homogeneous; }
bool mpi_threads_supported() { return torch_ops::MpiThreadsSupported(); }

}  // namespace horde

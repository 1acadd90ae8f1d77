#include "mpi_ops/device_launch_lock.h"

#include <map>

namespace horde {
namespace mpi {

std::unique_lock<std::mutex> LockLaunchesOn(ncclComm_t comm) {
  int device = -1;
  ncclCommCuDevice(comm, &device);  // cannot fail on a live communicator
  // Process-wide, as the GPUs are; never destroyed, so no runtime outlives it.
  static std::mutex* registry_mu = new std::mutex();
  static auto* locks = new std::map<int, std::mutex>();
  std::mutex* lock = nullptr;
  {
    std::lock_guard<std::mutex> registry(*registry_mu);
    lock = &(*locks)[device];  // std::map never moves its elements
  }
  return std::unique_lock<std::mutex>(*lock);
}

}  // namespace mpi
}  // namespace horde

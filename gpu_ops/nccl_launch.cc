#include "gpu_ops/nccl_launch.h"

#include <map>
#include <mutex>

#include "gpu_ops/cuda_devices.h"
#include "gpu_ops/nccl_check.h"

namespace horde {
namespace gpu {
namespace {

// One lock per GPU for the whole process. Every process set has its own runtime and
// background thread, and so its own NCCL communicators and streams on the GPU; NCCL
// requires that work on different communicators of one device is not enqueued from
// several threads at once (their CUDA calls interleave, and a launch can wait behind
// another communicator's kernels). So the NCCL calls of an op are enqueued under its
// device's lock, one whole group at a time. The lock covers NCCL calls only, never a
// wait for other ranks (MPI, the stream), which would let two sets on two ranks wait
// for each other. (Which set's op goes first on a rank still follows when each set's
// negotiation finishes there; see README, GPU tensors.)
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

}  // namespace

Status NcclLaunch::Nccl(const Calls& calls) {
  const auto launching = LockLaunchesOn(comm_);
  HORDE_RETURN_IF_ERROR(CheckNccl(ncclGroupStart(), "ncclGroupStart", what_));
  const Status enqueued = calls(comm_, stream_);
  // Ended even after a failed call: an open group would swallow the next op's calls.
  const Status ended = CheckNccl(ncclGroupEnd(), "ncclGroupEnd", what_);
  return enqueued.ok() ? ended : enqueued;
}

Status NcclLaunch::WaitForStream() { return r_.WaitForStream(stream_, comm_, what_); }

Status LaunchNccl(NcclResources& r, std::vector<TensorEntry>& entries, const std::string& what,
                  const NcclSteps& steps) {
  HORDE_RETURN_IF_ERROR(r.AgreeOnOneGpu(entries, what));
  NcclLaunch launch(r, entries[0].input->device(), what);
  const auto enqueueing = r.comms.Enqueueing();
  HORDE_RETURN_IF_ERROR(r.devices.Stream(launch.device_, &launch.stream_));
  HORDE_RETURN_IF_ERROR(steps.communicator ? steps.communicator(launch.device_, what, &launch.comm_)
                                           : r.comms.Get(launch.device_, what, &launch.comm_));
  HORDE_RETURN_IF_ERROR(WaitForInputs(entries, launch.stream_, what));
  if (steps.allocate) {
    Status allocated = steps.allocate(launch);
    // The framework's allocator may hand out memory its default stream still reads.
    if (allocated.ok()) allocated = WaitForLegacyStream(launch.stream_, what);
    HORDE_RETURN_IF_ERROR(r.AgreeToLaunch(allocated, what));
  }
  const Status enqueued = steps.enqueue(launch);
  return r.finalizer.CompleteAfter(entries, launch.device_, launch.stream_, launch.comm_, what,
                                   enqueued);
}

}  // namespace gpu
}  // namespace horde

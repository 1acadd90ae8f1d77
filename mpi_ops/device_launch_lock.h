#pragma once

#include <nccl.h>

#include <mutex>

namespace horde {
namespace mpi {

// One lock per GPU for the whole process. Every process set has its own runtime and
// background thread, and so its own NCCL communicators and streams on the GPU; NCCL
// requires that work on different communicators of one device is not enqueued from
// several threads at once (their CUDA calls interleave, and a launch can wait behind
// another communicator's kernels). So every NCCL op holds its device's lock while it
// enqueues, and the launches of different sets on one GPU happen one whole op at a
// time. The lock covers NCCL calls only, never a wait for other ranks (MPI, the
// stream), which would let two sets on two ranks wait for each other. (Which set's op
// goes first on a rank still follows when each set's negotiation finishes there; see
// README, GPU tensors.)
[[nodiscard]] std::unique_lock<std::mutex> LockLaunchesOn(ncclComm_t comm);

}  // namespace mpi
}  // namespace horde

#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gpu_ops/nccl_resources.h"
#include "horde/status.h"

namespace horde {
namespace gpu {

struct NcclSteps;

// An NCCL operation's way to the GPU while LaunchNccl runs it: the device and runtime
// stream, for the op's own kernels and copies, and Nccl(), the only place the
// communicator can be had, so no NCCL call escapes the launch lock and the group.
class NcclLaunch {
 public:
  // NCCL calls only, on `comm` and `stream`.
  using Calls = std::function<Status(ncclComm_t comm, cudaStream_t stream)>;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  const std::string& what() const { return what_; }

  // Enqueues `calls` under the device's launch lock (see nccl_launch.cc), inside one
  // ncclGroupStart/End. Kernels and copies go outside: in a group NCCL defers its
  // launches to ncclGroupEnd, so a kernel enqueued in between would run first.
  Status Nccl(const Calls& calls);
  // Waits on the host until the stream has run everything enqueued so far, failing (and
  // aborting the communicator) instead of blocking if the communicator breaks. For a
  // host step between two Nccl() phases; never call it inside one.
  Status WaitForStream();

 private:
  friend Status LaunchNccl(NcclResources&, std::vector<TensorEntry>&, const std::string&,
                           const NcclSteps&);
  NcclLaunch(NcclResources& resources, int device, const std::string& what)
      : r_(resources), device_(device), what_(what) {}

  NcclResources& r_;
  int device_;
  const std::string& what_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

// What one NCCL operation does; LaunchNccl runs it.
struct NcclSteps {
  // Optional: allocates the outputs (through the framework, on this thread) and any
  // scratch. Every rank's result is agreed before anything is launched, so a rank that
  // could not allocate fails the op everywhere instead of leaving its peers in NCCL.
  std::function<Status(NcclLaunch& launch)> allocate;
  // Enqueues the op on launch.stream(): its kernels and copies directly, its NCCL calls
  // through launch.Nccl(). Nothing here waits for the GPU unless the op has a host step.
  std::function<Status(NcclLaunch& launch)> enqueue;
  // Optional: the communicator, when not the one over all of the runtime's ranks on the
  // device (hierarchical allreduce: the node's).
  std::function<Status(int device, const std::string& what, ncclComm_t* comm)> communicator;
};

// The one launch path of the NCCL ops, in the only safe order: agree that every rank's
// entries sit on one GPU; hold the communicators' Enqueueing() lock throughout; take the
// stream and communicator and order the stream after the entries' inputs; allocate and
// agree; enqueue; hand the entries to the finalizer, which completes them once the GPU
// has run what was enqueued (also when enqueueing stopped halfway). `what` names the op
// in errors.
Status LaunchNccl(NcclResources& resources, std::vector<TensorEntry>& entries,
                  const std::string& what, const NcclSteps& steps);

}  // namespace gpu
}  // namespace horde

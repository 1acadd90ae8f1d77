#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/timeline.h"
#include "gpu_ops/cuda_devices.h"
#include "gpu_ops/cuda_finalizer.h"
#include "gpu_ops/nccl_communicators.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace gpu {

// What the GPU ops of one runtime share (the NCCL ones through LaunchNccl, nccl_launch.h). Members
// are destroyed in reverse order: the finalizer first (it waits for the work in flight), then the
// communicators, then the streams and buffers that work used.
//
// On a normal shutdown the work in flight completes before the finalizer's thread ends. When
// the runtime is torn down because a rank failed, the communicators are aborted first (the
// context's failure hook, mpi_context.h), so that no kernel left waiting on a dead peer keeps
// the runtime's threads from being joined.
struct NcclResources {
  NcclResources(std::shared_ptr<mpi::MpiContext> context, std::shared_ptr<Timeline> timeline);
  ~NcclResources();
  NcclResources(const NcclResources&) = delete;
  NcclResources& operator=(const NcclResources&) = delete;

  // The failure hook: marks every communicator broken with `reason` (what waits on one
  // aborts it), then fails what the finalizer holds on them and aborts them.
  void AbortForFailure(const std::string& reason);

  // For a fused response (several tensors; the same on every rank): whether every
  // rank's tensors sit on one GPU, as one communicator and one stream per rank need.
  // Agreed before any rank touches NCCL, so a rank whose tensors sit on two GPUs fails
  // the op on every rank, naming them, instead of launching elsewhere than its peers.
  Status AgreeOnOneGpu(const std::vector<TensorEntry>& entries, const std::string& what);
  // Whether every rank can launch the collective it has prepared (outputs and buffers
  // allocated): a rank that cannot would leave the others in NCCL forever, so all launch
  // or none does. One MPI allreduce; `local` if it failed, else an error if another's did.
  Status AgreeToLaunch(const Status& local, const std::string& what);
  // The device's fusion buffer of at least `bytes`. Growing it beyond what every rank
  // already holds is agreed like a launch (all ranks execute the same responses, so all
  // reach the same growth together).
  Status FusionBuffer(int device, int64_t bytes, const std::string& what, char** buffer);
  // Waits on the host until `stream` is done, watching `comm`: on an asynchronous error
  // it aborts the communicator (failing what the finalizer holds on it) and returns the
  // error instead of blocking forever. Caller holds comms.Enqueueing().
  Status WaitForStream(cudaStream_t stream, ncclComm_t comm, const std::string& what);

  std::shared_ptr<mpi::MpiContext> mpi;
  std::shared_ptr<Timeline> timeline;
  CudaDevices devices;
  NcclCommunicators comms;
  CudaFinalizer finalizer;
  std::map<int, int64_t> agreed_fusion_bytes;  // per device, what every rank holds
};

}  // namespace gpu
}  // namespace horde

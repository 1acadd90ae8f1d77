#include "gpu_ops/cuda_finalizer.h"

#include <chrono>

#include "gpu_ops/cuda_check.h"

namespace horde {
namespace gpu {
namespace {

// How long the poller sleeps when nothing has completed: short against a collective's
// duration, long enough that an idle GPU does not cost a core.
constexpr std::chrono::microseconds kPollInterval(20);

}  // namespace

CudaFinalizer::CudaFinalizer(NcclCommunicators& comms)
    : comms_(comms), thread_([this] { Loop(); }) {}

CudaFinalizer::~CudaFinalizer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

Status CudaFinalizer::CompleteAfter(std::vector<TensorEntry>& entries, int device,
                                    cudaStream_t stream, ncclComm_t comm, const std::string& what,
                                    const Status& enqueued) {
  Pending pending;
  pending.device = device;
  pending.comm = comm;
  pending.what = what;
  pending.failure = enqueued;
  HORDE_RETURN_IF_ERROR(CheckCuda(cudaEventCreateWithFlags(&pending.event, cudaEventDisableTiming),
                                  "cudaEventCreateWithFlags", what));
  const cudaError_t recorded = cudaEventRecord(pending.event, stream);
  if (recorded != cudaSuccess) {
    cudaEventDestroy(pending.event);
    return CheckCuda(recorded, "cudaEventRecord", what);
  }
  for (auto& entry : entries) {
    pending.entries.push_back(entry);
    entry.callback = [](const Status&) {};
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(pending));
  }
  wake_.notify_one();
  return Status::Ok();
}

void CudaFinalizer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and everything handed over has completed
    std::list<Pending> done = TakeCompleted();
    const std::vector<BrokenComm> broken = FindBrokenComms();
    // The communicators' lock comes before mu_ (an op holds it while handing work over
    // here), and callbacks run without mu_.
    lock.unlock();
    for (const auto& b : broken) {
      const auto enqueueing = comms_.Enqueueing();
      // Nothing pending on it any more: the background thread aborted it meanwhile.
      if (FailPendingOn(b.comm, b.error) > 0) comms_.Abort(b.comm, b.error);
    }
    if (done.empty() && broken.empty()) std::this_thread::sleep_for(kPollInterval);
    Finish(done);
    lock.lock();
  }
}

size_t CudaFinalizer::FailPendingOn(ncclComm_t comm, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t failed = 0;
  for (auto& p : pending_) {
    if (p.comm != comm) continue;
    if (p.failure.ok()) p.failure = Status::Internal(p.what + ": " + error);
    p.comm = nullptr;  // an aborted communicator must not be queried again
    ++failed;
  }
  return failed;
}

std::list<CudaFinalizer::Pending> CudaFinalizer::TakeCompleted() {
  std::list<Pending> done;
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto next = std::next(it);
    // Each call on the device's own context: no stray context on device 0.
    cudaSetDevice(it->device);
    if (cudaEventQuery(it->event) != cudaErrorNotReady) done.splice(done.end(), pending_, it);
    it = next;
  }
  return done;
}

std::vector<CudaFinalizer::BrokenComm> CudaFinalizer::FindBrokenComms() const {
  std::vector<BrokenComm> broken;
  for (const auto& p : pending_) {
    if (p.comm == nullptr) continue;
    bool seen = false;
    for (const auto& b : broken) seen = seen || b.comm == p.comm;
    if (seen) continue;
    std::string error = comms_.Broken(p.comm);
    if (!error.empty()) broken.push_back({p.comm, std::move(error)});
  }
  return broken;
}

void CudaFinalizer::Finish(std::list<Pending>& done) {
  for (auto& finished : done) {
    cudaSetDevice(finished.device);
    // A failed query (e.g. a kernel fault) fails the op with CUDA's text.
    const Status status = finished.failure.ok()
                              ? CheckCuda(cudaEventQuery(finished.event), "cudaEventQuery",
                                          "completion of " + finished.what)
                              : finished.failure;
    cudaEventDestroy(finished.event);
    for (auto& entry : finished.entries) CompleteEntry(entry, status);
  }
}

}  // namespace gpu
}  // namespace horde

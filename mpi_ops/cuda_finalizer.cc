#include "mpi_ops/cuda_finalizer.h"

#include <chrono>

#include "mpi_ops/cuda_check.h"

namespace horde {
namespace mpi {
namespace {

// How long the poller sleeps when nothing has completed: short against a collective's
// duration, long enough that an idle GPU does not cost a core.
constexpr std::chrono::microseconds kPollInterval(20);

}  // namespace

CudaFinalizer::CudaFinalizer() : thread_([this] { Loop(); }) {}

CudaFinalizer::~CudaFinalizer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

Status CudaFinalizer::CompleteAfter(std::vector<TensorEntry>& entries, cudaStream_t stream,
                                    const std::string& what) {
  Pending pending;
  pending.what = what;
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
    // Take the completed ones out under the lock; run their callbacks without it.
    std::list<Pending> done;
    for (auto it = pending_.begin(); it != pending_.end();) {
      const cudaError_t state = cudaEventQuery(it->event);
      if (state == cudaErrorNotReady) {
        ++it;
        continue;
      }
      auto next = std::next(it);
      done.splice(done.end(), pending_, it);
      it = next;
    }
    lock.unlock();
    if (done.empty()) std::this_thread::sleep_for(kPollInterval);
    for (auto& finished : done) {
      // A failed query (e.g. a kernel fault) fails the op with CUDA's text.
      const Status status = CheckCuda(cudaEventQuery(finished.event), "cudaEventQuery",
                                      "completion of " + finished.what);
      cudaEventDestroy(finished.event);
      for (auto& entry : finished.entries) entry.callback(status);
    }
    lock.lock();
  }
}

}  // namespace mpi
}  // namespace horde

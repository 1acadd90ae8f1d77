#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

#include "core/tensor.h"
#include "horde/status.h"

namespace horde {
namespace testing {

// One submitted operation whose completion a test can wait for: Callback() goes into
// the TensorEntry, Finish() records a status the runtime refused at submit.
struct PendingOp : std::enable_shared_from_this<PendingOp> {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::shared_ptr<Tensor> output;  // for operations that allocate their output

  void Finish(const Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    status = s;
    cv.notify_all();
  }

  StatusCallback Callback() {
    auto self = shared_from_this();
    return [self](const Status& s) { self->Finish(s); };
  }

  Status Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return done; });
    return status;
  }
};

}  // namespace testing
}  // namespace horde

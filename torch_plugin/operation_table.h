#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "torch_plugin/operation.h"

namespace horde {

// A handle's number. 64-bit and never reused: a job issuing a billion operations a
// second would need 292 years to run out, so no id can ever name two operations (a
// stale handle kept by a script, or a late release, never touches a newer one).
using HandleId = int64_t;

namespace torch_ops {

// The operations in flight, by handle: the one place where the C++ and Python APIs
// find what an operation returns (a Python handle is an int, as Horovod's are, and only
// this table's key). The background thread completes members; framework threads poll,
// wait and release. Thread-safe.
//
// An operation lives here until it is waited on (WaitAndTake) or released by a handle
// dropped without waiting (Release), so a long job keeps none it no longer needs.
class OperationTable {
 public:
  // The process's, for as long as the process: its handles outlive any runtime.
  static OperationTable& OfProcess();
  // `first`: the first id issued (tests start near the 32-bit limit).
  explicit OperationTable(HandleId first = 0) : next_handle_(first) {}

  HandleId Allocate(size_t members = 1, bool grouped = false, std::string context = "");
  // Before the operation is queued, while only its submitter knows the handle.
  void SetInPlaceTarget(HandleId handle, size_t member, const at::Tensor& tensor, bool copy_back);
  void SetReceivedSplits(HandleId handle, const at::Tensor& received_splits);
  // From the background thread.
  void SetOutput(HandleId handle, size_t member, std::shared_ptr<Tensor> output);
  void Complete(HandleId handle, size_t member, const Status& status);

  // InvalidArgument for a handle that does not exist (never issued, or already waited on).
  Status Poll(HandleId handle, bool* done);
  // Blocks until every member completes, then forgets the handle and hands over its
  // operation (see Operation::TakeResult); the status is the operation's.
  Status WaitAndTake(HandleId handle, Operation* operation);
  // Forgets a handle nobody will wait on: at once if its operation has completed, else
  // as soon as it does (its outputs are dropped now). Unknown handles are ignored.
  void Release(HandleId handle);

  // Operations issued and not yet forgotten (for leak checks).
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  HandleId next_handle_;
  std::unordered_map<HandleId, Operation> operations_;
};

}  // namespace torch_ops
}  // namespace horde

#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "horde/status.h"

namespace horde {
namespace torch_ops {

// What waiting on an operation gives: one output per tensor it was given (an in-place
// operation's: the caller's own tensors, holding the result) and, for an alltoall, the
// rows received from each rank.
struct OperationResult {
  std::vector<at::Tensor> outputs;
  at::Tensor received_splits;  // undefined unless an alltoall
  bool grouped = false;        // submitted as a group: the outputs are a list, even of one
};

// Everything one asynchronous operation's completion involves, in one place: each
// member's status and output (a grouped operation has one member per tensor, and ends
// when every member has), where an in-place member's result goes, and an alltoall's
// received splits. The runtime's background thread completes the members; the thread
// that waits turns the operation into its result. The C++ and Python APIs both hold it
// through its handle (see operation_table.h). Not thread-safe: its table guards it.
class Operation {
 public:
  // `context` goes in front of every failure, e.g. "process set 1 (ranks [0, 2]): ".
  explicit Operation(size_t members = 0, bool grouped = false, std::string context = "");

  void SetOutput(size_t member, std::shared_ptr<Tensor> output);
  void Complete(size_t member, const Status& status);
  // Makes the member's result land in `tensor`, which the member works on directly or,
  // when `copy_back`, through a contiguous copy.
  void SetInPlaceTarget(size_t member, const at::Tensor& tensor, bool copy_back);
  void SetReceivedSplits(const at::Tensor& received_splits);

  bool done() const { return completed_ == members_.size(); }
  // Marks it dropped unwaited: its outputs are let go now, and it is forgotten once done.
  void Abandon();
  bool abandoned() const { return abandoned_; }

  // Once done: the first member's failure (in member order), else OK.
  Status status() const;
  // Once done and OK: the result, with in-place members' outputs copied back into the
  // caller's tensors where they ran on a copy. Call outside the table's lock.
  OperationResult TakeResult();

 private:
  struct Member {
    bool done = false;
    Status status;
    std::shared_ptr<Tensor> output;
    at::Tensor in_place_target;  // undefined unless in place
    bool copy_back = false;
  };

  std::vector<Member> members_;
  size_t completed_ = 0;
  bool grouped_;
  bool abandoned_ = false;
  std::string context_;
  at::Tensor received_splits_;
};

}  // namespace torch_ops
}  // namespace horde

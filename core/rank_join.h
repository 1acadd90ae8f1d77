#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/op_registry.h"
#include "core/request.h"
#include "core/response.h"
#include "core/tensor_queue.h"

namespace horde {

// A rank's side of join (hvd.join(): a rank that ran out of data keeps taking part).
// While this rank is joined it holds no tensors for the allreduces the others run, and
// contributes the identity of their reduce op instead, in the memory the others'
// tensors are in; its join completes, receiving the last rank to join, once every rank
// has joined (core/joined_ranks.h decides when). While any rank is joined, every round
// goes through the coordinator, which alone knows who contributes what.
//
// Submitting() runs on the submitting threads; the rest on the background thread.
class RankJoin {
 public:
  // Before `request` is queued: names a join, and notes the device identity tensors go
  // on (the one given to join, else the GPU this rank last submitted a tensor from).
  void Submitting(Request* request);

  // This rank's join goes to the coordinator: from now on it may lack tensors.
  void Joining() { joined_ = true; }
  // A round in which some rank joined, and the round that decided the join's
  // completion: in between, the join is in progress.
  void SawJoin() { in_progress_ = true; }
  void SawCompletion() { in_progress_ = false; }
  bool in_progress() const { return in_progress_; }

  // Moves `response`'s entries, in name order, from `queue` into `entries`; while this
  // rank is joined, a name it lacks gets the identity of the reduce op from `ops`. An
  // error says the identity could not be made (the entries are all there, such ones
  // without tensors).
  Status TakeEntries(const Response& response, TensorQueue* queue, const OpRegistry& ops,
                     std::vector<TensorEntry>* entries) const;
  // Completes this rank's join: moves the join's entries from `queue` into `entries`,
  // an int32 output receiving the last rank to join.
  void Complete(const Response& join, TensorQueue* queue, std::vector<TensorEntry>* entries);

 private:
  // The device this rank's identity tensors for `response` go on.
  int32_t IdentityDevice(const Response& response) const;

  bool joined_ = false;
  bool in_progress_ = false;
  std::atomic<int32_t> join_device_{kCpuDevice};
  std::atomic<int32_t> last_gpu_device_{kCpuDevice};
};

}  // namespace horde

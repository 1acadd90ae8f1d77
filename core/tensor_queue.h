#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/request.h"
#include "core/tensor.h"
#include "horde/status.h"

namespace horde {

// Operations submitted by framework threads and not yet completed, by name, plus the
// requests the background thread has not yet sent to negotiation. Thread-safe.
class TensorQueue {
 public:
  // Adds all the operations or none: fails with InvalidArgument if any name is already
  // in flight (or repeated), or with the closing status once the queue is closed. The
  // elements are moved out only when all are added.
  Status Add(std::vector<Request>* requests, std::vector<TensorEntry>* entries);

  // Blocks until new requests arrive, Wake() is called, or the timeout passes. For the
  // first `spin` of it, it polls (yielding the core) instead of sleeping: a request that
  // comes soon, as the next one of a burst or of a loop of blocking calls does, then
  // starts its round without the cost of a thread wake-up.
  void WaitForWork(std::chrono::microseconds timeout,
                   std::chrono::microseconds spin = std::chrono::microseconds(0));
  void Wake();

  // Replaces `out`'s contents with the requests added since the last call; the queue
  // keeps `out`'s old storage for the next ones (two buffers trade places, round after
  // round, without allocating).
  void TakeNewRequests(std::vector<Request>* out);
  // Removes the entries for `names` and puts them into `out` (replacing its contents),
  // in that order. A name with no entry here (a protocol violation) is skipped.
  void TakeEntries(const std::vector<std::string>& names, std::vector<TensorEntry>* out);

  // Refuses later Add()s with `status` and returns everything still pending.
  std::vector<TensorEntry> Close(const Status& status);

 private:
  using EntryMap = std::unordered_map<std::string, TensorEntry>;
  // Enough for a large model's gradients in flight at once, small enough to be no leak.
  static constexpr size_t kMaxSpareNodes = 4096;

  // Adds `entry` under `name` unless the name is in flight (then `entry` is left as it
  // was). Needs mu_.
  bool Insert(const std::string& name, TensorEntry* entry);
  // Takes the entry out and keeps its node for a later Insert. Needs mu_.
  TensorEntry Remove(EntryMap::iterator it);

  std::mutex mu_;
  std::condition_variable cv_;
  EntryMap entries_;
  // Nodes of entries taken out, reused by later ones (with their keys' capacity), so that
  // the steady state allocates no node per operation.
  std::vector<EntryMap::node_type> spare_nodes_;
  std::vector<Request> new_requests_;
  bool woken_ = false;
  std::atomic<bool> has_new_requests_{false};  // new_requests_ is non-empty
  bool closed_ = false;
  Status close_status_;
};

}  // namespace horde

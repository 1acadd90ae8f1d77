#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/transport.h"

namespace horde {
namespace testing {

// The meeting point of N simulated ranks living in one process. Every collective call
// is a "phase": each rank deposits one blob, and the phase completes when all N have
// arrived. A generation counter keeps consecutive phases apart, and every wait is
// bounded so a protocol bug shows up as an error instead of a hung test.
class FakeHub {
 public:
  explicit FakeHub(int size, std::chrono::milliseconds timeout = std::chrono::seconds(10));

  int size() const { return size_; }

  // Deposits `mine` as `rank`'s part of the current phase of kind `call` and waits for
  // the others; `all` gets every rank's blob, indexed by rank, unless it is null (a rank
  // that reads none of them need not copy N blobs: that copy is O(N^2) over all ranks).
  Status Exchange(int rank, const char* call, std::string mine, std::vector<std::string>* all);

 private:
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  int arrived_ = 0;
  std::string phase_call_;              // the call every rank of this phase must make
  std::vector<std::string> pending_;    // blobs of the phase in progress
  std::vector<std::string> completed_;  // blobs of the last completed phase
};

// One rank's view of a FakeHub. Rank 0 is the coordinator.
class FakeTransport : public Transport {
 public:
  FakeTransport(std::shared_ptr<FakeHub> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return hub_->size(); }
  Status GatherToCoordinator(const std::string& mine, std::vector<std::string>* all) override;
  Status BroadcastFromCoordinator(std::string* blob) override;
  Status AllreduceAnd(std::vector<uint64_t>* words) override;

 private:
  std::shared_ptr<FakeHub> hub_;
  int rank_;
};

// Runs fn(rank) for ranks 0..size-1, each on its own thread, and joins them all.
void RunOnRanks(int size, const std::function<void(int rank)>& fn);

}  // namespace testing
}  // namespace horde

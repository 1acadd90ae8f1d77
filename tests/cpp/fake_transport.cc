#include "tests/cpp/fake_transport.h"

#include <thread>

namespace horde {
namespace testing {

FakeHub::FakeHub(int size, std::chrono::milliseconds timeout)
    : size_(size), timeout_(timeout), pending_(size) {}

Status FakeHub::Exchange(int rank, const char* call, std::string mine,
                         std::vector<std::string>* all) {
  std::unique_lock<std::mutex> lock(mu_);
  if (arrived_ == 0) {
    phase_call_ = call;
  } else if (phase_call_ != call) {
    // Real collectives would deadlock or corrupt data here; say so instead.
    return Status::Internal("fake transport: rank " + std::to_string(rank) + " called " + call +
                            " while other ranks are in " + phase_call_);
  }
  const uint64_t my_generation = generation_;
  pending_[rank] = std::move(mine);
  if (++arrived_ == size_) {
    completed_.swap(pending_);
    pending_.assign(size_, std::string());
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
  } else if (!cv_.wait_for(lock, timeout_, [&] { return generation_ != my_generation; })) {
    // Withdraw, so the hub stays consistent for whoever calls next.
    --arrived_;
    pending_[rank].clear();
    return Status::Internal("fake transport timed out: rank " + std::to_string(rank) +
                            " waited in " + call + " for the other ranks");
  }
  // completed_ stays put until the next phase completes, which needs this rank again.
  if (all != nullptr) *all = completed_;
  return Status::Ok();
}

Status FakeTransport::GatherToCoordinator(const std::string& mine, std::vector<std::string>* all) {
  all->clear();
  return hub_->Exchange(rank_, "GatherToCoordinator", mine, rank_ == 0 ? all : nullptr);
}

Status FakeTransport::BroadcastFromCoordinator(std::string* blob) {
  std::vector<std::string> all;
  HORDE_RETURN_IF_ERROR(
      hub_->Exchange(rank_, "BroadcastFromCoordinator", rank_ == 0 ? *blob : std::string(), &all));
  *blob = all[0];
  return Status::Ok();
}

Status FakeTransport::AllreduceAnd(std::vector<uint64_t>* words) {
  std::string mine(reinterpret_cast<const char*>(words->data()), words->size() * sizeof(uint64_t));
  std::vector<std::string> all;
  HORDE_RETURN_IF_ERROR(hub_->Exchange(rank_, "AllreduceAnd", std::move(mine), &all));
  for (const std::string& theirs : all) {
    if (theirs.size() != words->size() * sizeof(uint64_t)) {
      return Status::Internal("fake transport: ranks passed different lengths to AllreduceAnd");
    }
    const auto* other = reinterpret_cast<const uint64_t*>(theirs.data());
    for (size_t i = 0; i < words->size(); ++i) (*words)[i] &= other[i];
  }
  return Status::Ok();
}

void RunOnRanks(int size, const std::function<void(int rank)>& fn) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) threads.emplace_back(fn, rank);
  for (auto& t : threads) t.join();
}

}  // namespace testing
}  // namespace horde

#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/negotiator.h"
#include "tests/cpp/fake_transport.h"

namespace horde {
namespace testing {

constexpr int64_t kDefaultThreshold = 128 * 1024 * 1024;

// N ranks in one process, each with its own Negotiator over a fake transport; every
// round runs on N threads at once, as the ranks' background loops would. The
// coordinator's clock is the test's: it stands still unless the test advances it.
class SimulatedRanks {
 public:
  explicit SimulatedRanks(int size, int64_t fusion_threshold = kDefaultThreshold,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10),
                          StallSettings stall = StallSettings(),
                          size_t cache_capacity = NegotiationSettings().cache_capacity);

  int size() const { return hub_->size(); }
  size_t pending_on_coordinator() const { return negotiators_[0]->pending_on_coordinator(); }
  const Negotiator& negotiator(int rank) const { return *negotiators_[rank]; }
  // Moves the coordinator's clock forward; call between rounds.
  void Advance(std::chrono::duration<double> elapsed);

  void RunRound(const std::vector<RequestList>& mine, std::vector<Status>* status,
                std::vector<ResponseList>* decided);
  // One round that must succeed with the same decision on every rank; returns it.
  ResponseList Round(const std::vector<RequestList>& mine);

 private:
  std::shared_ptr<FakeHub> hub_;
  SteadyTime now_;
  std::vector<std::unique_ptr<FakeTransport>> transports_;
  std::vector<std::unique_ptr<Negotiator>> negotiators_;
};

Request Allreduce(const std::string& name, DataType dtype = DataType::kFloat32,
                  TensorShape shape = {4});
Request Join();

// What each rank submits this round, built per rank.
std::vector<RequestList> PerRank(int size, const std::function<std::vector<Request>(int)>& fn);
std::vector<RequestList> Everyone(int size, const std::vector<Request>& requests);
std::vector<RequestList> Nobody(int size);
// `request` from rank `who` only, or from every rank but `who`.
std::vector<RequestList> Only(int size, int who, const Request& request);
std::vector<RequestList> AllBut(int size, int who, const Request& request);

}  // namespace testing
}  // namespace horde

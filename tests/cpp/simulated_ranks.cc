#include "tests/cpp/simulated_ranks.h"

#include <gtest/gtest.h>

#include "core/wire_codec.h"

namespace horde {
namespace testing {

SimulatedRanks::SimulatedRanks(int size, int64_t fusion_threshold,
                               std::chrono::milliseconds timeout, StallSettings stall,
                               size_t cache_capacity)
    : hub_(std::make_shared<FakeHub>(size, timeout)) {
  NegotiationSettings settings;
  settings.fusion_threshold_bytes = fusion_threshold;
  settings.cache_capacity = cache_capacity;
  settings.stall = stall;
  for (int rank = 0; rank < size; ++rank) {
    transports_.push_back(std::make_unique<FakeTransport>(hub_, rank));
    // The ranks read the clock during a round; the test moves it between rounds, and
    // starting and joining the rank threads orders the two.
    negotiators_.push_back(
        std::make_unique<Negotiator>(transports_.back().get(), settings, [this] { return now_; }));
  }
}

void SimulatedRanks::Advance(std::chrono::duration<double> elapsed) {
  now_ += std::chrono::duration_cast<SteadyTime::duration>(elapsed);
}

void SimulatedRanks::RunRound(const std::vector<RequestList>& mine, std::vector<Status>* status,
                              std::vector<ResponseList>* decided) {
  status->assign(size(), Status());
  decided->assign(size(), ResponseList());
  RunOnRanks(size(), [&](int rank) {
    RequestList list = mine[rank];
    (*status)[rank] = negotiators_[rank]->RunRound(&list, &(*decided)[rank]);
  });
}

ResponseList SimulatedRanks::Round(const std::vector<RequestList>& mine) {
  std::vector<Status> status;
  std::vector<ResponseList> decided;
  RunRound(mine, &status, &decided);
  for (int rank = 0; rank < size(); ++rank) {
    EXPECT_TRUE(status[rank].ok()) << "rank " << rank << ": " << status[rank].message();
    EXPECT_EQ(EncodeResponseList(decided[rank]), EncodeResponseList(decided[0]))
        << "rank " << rank << " decided differently from the coordinator";
  }
  return decided[0];
}

Request Allreduce(const std::string& name, DataType dtype, TensorShape shape) {
  Request r;
  r.name = name;
  r.dtype = dtype;
  r.shape = std::move(shape);
  return r;
}

Request Join() {
  Request r;
  r.op = OpType::kJoin;
  r.name = kJoinName;
  return r;
}

std::vector<RequestList> PerRank(int size, const std::function<std::vector<Request>(int)>& fn) {
  std::vector<RequestList> lists(size);
  for (int rank = 0; rank < size; ++rank) {
    lists[rank].requests = fn(rank);
    for (auto& r : lists[rank].requests) r.rank = rank;
  }
  return lists;
}

std::vector<RequestList> Everyone(int size, const std::vector<Request>& requests) {
  return PerRank(size, [&](int) { return requests; });
}

std::vector<RequestList> Nobody(int size) { return std::vector<RequestList>(size); }

std::vector<RequestList> Only(int size, int who, const Request& request) {
  return PerRank(size, [&](int rank) {
    return rank == who ? std::vector<Request>{request} : std::vector<Request>{};
  });
}

std::vector<RequestList> AllBut(int size, int who, const Request& request) {
  return PerRank(size, [&](int rank) {
    return rank == who ? std::vector<Request>{} : std::vector<Request>{request};
  });
}

}  // namespace testing
}  // namespace horde

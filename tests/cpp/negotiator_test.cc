#include "core/negotiator.h"

#include <gtest/gtest.h>

#include <functional>

#include "tests/cpp/simulated_ranks.h"

namespace horde {
namespace {

using testing::AllBut;
using testing::Allreduce;
using testing::Everyone;
using testing::Join;
using testing::kDefaultThreshold;
using testing::Nobody;
using testing::Only;
using testing::PerRank;
using testing::SimulatedRanks;

class NegotiatorTest : public ::testing::TestWithParam<int> {
 protected:
  int size() const { return GetParam(); }
};

TEST_P(NegotiatorTest, AllRanksReadyGivesOneIdenticalResponse) {
  SimulatedRanks ranks(size());
  Request r = Allreduce("grad.w", DataType::kFloat64, {2, 3});
  r.reduce_op = ReduceOp::kAverage;
  r.prescale = 0.5;
  r.postscale = 0.25;
  r.device = 1;
  ResponseList decided = ranks.Round(Everyone(size(), {r}));
  ASSERT_EQ(decided.responses.size(), 1u);
  const Response& response = decided.responses[0];
  EXPECT_EQ(response.kind, Response::Kind::kCollective);
  EXPECT_EQ(response.op, OpType::kAllreduce);
  EXPECT_EQ(response.names, std::vector<std::string>{"grad.w"});
  EXPECT_EQ(response.dtype, DataType::kFloat64);
  EXPECT_EQ(response.reduce_op, ReduceOp::kAverage);
  EXPECT_EQ(response.prescale, 0.5);
  EXPECT_EQ(response.postscale, 0.25);
  EXPECT_EQ(response.device, 1);
  EXPECT_FALSE(decided.shutdown);
  EXPECT_EQ(ranks.pending_on_coordinator(), 0u);
}

TEST_P(NegotiatorTest, NoResponseUntilEveryRankHasAsked) {
  SimulatedRanks ranks(size());
  EXPECT_TRUE(ranks.Round(AllBut(size(), 1, Allreduce("late"))).responses.empty());
  EXPECT_EQ(ranks.pending_on_coordinator(), 1u);
  EXPECT_TRUE(ranks.Round(Nobody(size())).responses.empty());

  ResponseList decided = ranks.Round(Only(size(), 1, Allreduce("late")));
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kCollective);
  EXPECT_EQ(decided.responses[0].names, std::vector<std::string>{"late"});
  EXPECT_EQ(ranks.pending_on_coordinator(), 0u);
}

struct Mismatch {
  const char* field;                     // as the error message names it
  Request agreed;                        // what every rank but rank 1 sends
  std::function<void(Request*)> change;  // what rank 1 does differently
  const char* agreed_value;
  const char* odd_value;
};

Request WithOp(OpType op, TensorShape shape = {4}) {
  Request r = Allreduce("bad", DataType::kFloat32, std::move(shape));
  r.op = op;
  return r;
}

std::function<void(Request*)> Reshape(TensorShape shape) {
  return [shape](Request* r) { r->shape = shape; };
}

std::vector<Mismatch> AllMismatches() {
  const Request allreduce = WithOp(OpType::kAllreduce);
  return {
      {"dtype", allreduce, [](Request* r) { r->dtype = DataType::kInt32; }, "float32", "int32"},
      {"shape", WithOp(OpType::kAllreduce, {2, 3}), Reshape({3, 2}), "[2, 3]", "[3, 2]"},
      {"reduce op", allreduce, [](Request* r) { r->reduce_op = ReduceOp::kMax; }, "Sum", "Max"},
      {"prescale factor", allreduce, [](Request* r) { r->prescale = 0.5; }, "1", "0.5"},
      {"postscale factor", allreduce, [](Request* r) { r->postscale = 0.125; }, "1", "0.125"},
      // Differs only in the 7th significant digit: still a disagreement.
      {"prescale factor", allreduce, [](Request* r) { r->prescale = 1.0 + 1.0 / (1 << 20); }, "1",
       "1.0000009536743164"},
      {"operation", allreduce, [](Request* r) { r->op = OpType::kBroadcast; }, "allreduce",
       "broadcast"},
      {"root rank", WithOp(OpType::kBroadcast), [](Request* r) { r->root = 1; }, "0", "1"},
      {"shape", WithOp(OpType::kBroadcast), Reshape({5}), "[4]", "[5]"},
      {"device", allreduce, [](Request* r) { r->device = 0; }, "cpu", "gpu"},
      {"shape (all but the first dimension)", WithOp(OpType::kAllgather, {2, 3}), Reshape({2, 4}),
       "[*, 3]", "[*, 4]"},
      {"shape (all but the first dimension)", WithOp(OpType::kAllgather, {3}), Reshape({3, 1}),
       "[*]", "[*, 1]"},
  };
}

std::string OtherRanks(int size) {
  if (size == 2) return "rank 0";
  std::string s = "ranks 0";
  for (int rank = 2; rank < size; ++rank) s += "," + std::to_string(rank);
  return s;
}

TEST_P(NegotiatorTest, EachMismatchIsAnErrorNamingTensorFieldAndValues) {
  for (const Mismatch& m : AllMismatches()) {
    SCOPED_TRACE(std::string(m.field) + ": " + m.agreed_value + " vs " + m.odd_value);
    SimulatedRanks ranks(size());
    // A healthy tensor in the same round must not be dragged down by the bad one.
    ResponseList decided = ranks.Round(PerRank(size(), [&](int rank) {
      Request bad = m.agreed;
      if (rank == 1) m.change(&bad);
      return std::vector<Request>{bad, Allreduce("healthy", DataType::kInt64)};
    }));
    ASSERT_EQ(decided.responses.size(), 2u);
    const Response& error = decided.responses[0];
    EXPECT_EQ(error.kind, Response::Kind::kError);
    EXPECT_EQ(error.names, std::vector<std::string>{"bad"});
    const std::string& msg = error.error_message;
    EXPECT_NE(msg.find("'bad'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("the ") + m.field + " of"), std::string::npos) << msg;
    EXPECT_NE(msg.find(m.agreed_value + (" on " + OtherRanks(size()))), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string(m.odd_value) + " on rank 1"), std::string::npos) << msg;
    EXPECT_EQ(decided.responses[1].kind, Response::Kind::kCollective);
    EXPECT_EQ(decided.responses[1].names, std::vector<std::string>{"healthy"});
  }
}

TEST_P(NegotiatorTest, AllgatherFirstDimensionsMayDifferAndAreReported) {
  SimulatedRanks ranks(size());
  ResponseList decided = ranks.Round(PerRank(size(), [](int rank) {
    return std::vector<Request>{WithOp(OpType::kAllgather, {rank + 1, 3, 2})};
  }));
  ASSERT_EQ(decided.responses.size(), 1u);
  const Response& response = decided.responses[0];
  EXPECT_EQ(response.kind, Response::Kind::kCollective) << response.error_message;
  EXPECT_EQ(response.op, OpType::kAllgather);
  std::vector<int64_t> expected;
  for (int rank = 0; rank < size(); ++rank) expected.push_back(rank + 1);
  EXPECT_EQ(response.first_dims, expected);
}

TEST_P(NegotiatorTest, ShutdownFromAnyOneRankReachesEveryRank) {
  SimulatedRanks ranks(size());
  std::vector<RequestList> mine = Everyone(size(), {Allreduce("last")});
  mine[size() - 1].shutdown = true;
  std::vector<Status> status;
  std::vector<ResponseList> decided;
  ranks.RunRound(mine, &status, &decided);
  for (int rank = 0; rank < size(); ++rank) {
    ASSERT_TRUE(status[rank].ok()) << status[rank].message();
    EXPECT_TRUE(decided[rank].shutdown) << "rank " << rank;
    // Work that became ready in the same round is still decided.
    ASSERT_EQ(decided[rank].responses.size(), 1u);
    EXPECT_EQ(decided[rank].responses[0].names, std::vector<std::string>{"last"});
  }
  EXPECT_FALSE(ranks.Round(Nobody(size())).shutdown);
}

TEST_P(NegotiatorTest, AFailedRanksReasonReachesEveryRankWithItsRank) {
  SimulatedRanks ranks(size());
  ranks.Round(Everyone(size(), {Allreduce("cached")}));
  auto mine = PerRank(size(), [](int rank) {
    return rank == 0 ? std::vector<Request>{Allreduce("cached")} : std::vector<Request>{};
  });
  for (int rank : {1, size() - 1}) {
    mine[rank].shutdown = true;
    mine[rank].failure = "RuntimeError: boom from " + std::to_string(rank);
  }
  ResponseList decided = ranks.Round(mine);
  EXPECT_TRUE(decided.shutdown);
  EXPECT_EQ(decided.shutdown_reason, "rank 1 failed: RuntimeError: boom from 1")
      << "the lowest failed rank's reason";
}

TEST_P(NegotiatorTest, ResponsesComeInTheOrderNamesWereFirstRequested) {
  for (int64_t threshold : {int64_t{0}, kDefaultThreshold}) {
    SCOPED_TRACE("fusion threshold " + std::to_string(threshold));
    SimulatedRanks ranks(size(), threshold);
    auto round1 = PerRank(size(), [](int rank) {
      return rank == 0 ? std::vector<Request>{Allreduce("z")} : std::vector<Request>{};
    });
    EXPECT_TRUE(ranks.Round(round1).responses.empty());
    auto round2 = PerRank(size(), [](int rank) {
      if (rank == 0) return std::vector<Request>{Allreduce("y"), Allreduce("x")};
      return std::vector<Request>{Allreduce("x"), Allreduce("y"), Allreduce("z")};
    });
    std::vector<std::string> order;
    for (const auto& r : ranks.Round(round2).responses) {
      order.insert(order.end(), r.names.begin(), r.names.end());
    }
    EXPECT_EQ(order, (std::vector<std::string>{"z", "y", "x"}));
  }
}

TEST_P(NegotiatorTest, SmallAllreducesOfOneDtypeAreFusedOthersAreNot) {
  SimulatedRanks ranks(size());
  std::vector<Request> requests;
  for (int i = 0; i < 5; ++i) {
    requests.push_back(Allreduce("f" + std::to_string(i), DataType::kFloat32));
    requests.push_back(Allreduce("i" + std::to_string(i), DataType::kInt32));
  }
  ResponseList decided = ranks.Round(Everyone(size(), requests));
  ASSERT_EQ(decided.responses.size(), 2u);
  EXPECT_EQ(decided.responses[0].dtype, DataType::kFloat32);
  EXPECT_EQ(decided.responses[0].names, (std::vector<std::string>{"f0", "f1", "f2", "f3", "f4"}));
  EXPECT_EQ(decided.responses[1].dtype, DataType::kInt32);
  EXPECT_EQ(decided.responses[1].names, (std::vector<std::string>{"i0", "i1", "i2", "i3", "i4"}));
}

TEST_P(NegotiatorTest, UndecodableRequestFailsTheRoundOnEveryRankWithoutHanging) {
  // The coordinator cannot decode a negative dimension. It must still take part in the
  // broadcast, or every other rank would wait for it forever (here: until the timeout).
  SimulatedRanks ranks(size(), kDefaultThreshold, std::chrono::seconds(3));
  auto mine = PerRank(size(), [](int rank) {
    return std::vector<Request>{Allreduce("w", DataType::kFloat32, {rank == 1 ? -1 : 4})};
  });
  std::vector<Status> status;
  std::vector<ResponseList> decided;
  ranks.RunRound(mine, &status, &decided);
  for (int rank = 0; rank < size(); ++rank) {
    EXPECT_EQ(status[rank].code(), StatusCode::kInternal) << "rank " << rank;
    EXPECT_EQ(status[rank].message().find("timed out"), std::string::npos)
        << "rank " << rank << ": " << status[rank].message();
  }
  EXPECT_NE(status[0].message().find("from rank 1"), std::string::npos) << status[0].message();
  EXPECT_NE(status[1].message().find("coordinator failed"), std::string::npos)
      << status[1].message();
}

TEST_P(NegotiatorTest, JoinedRanksCountAsReadyAndTheJoinEndsWithTheLastRank) {
  SimulatedRanks ranks(size());
  auto rank1_joins = PerRank(size(), [](int rank) {
    return rank == 1 ? std::vector<Request>{Join()} : std::vector<Request>{Allreduce("x")};
  });
  ResponseList first = ranks.Round(rank1_joins);
  ASSERT_EQ(first.responses.size(), 1u) << "the allreduce runs without rank 1, and no join yet";
  EXPECT_EQ(first.responses[0].kind, Response::Kind::kCollective);
  EXPECT_EQ(first.responses[0].tensor_sizes, std::vector<int64_t>{4});

  auto others_join = PerRank(size(), [](int rank) {
    return rank == 1 ? std::vector<Request>{} : std::vector<Request>{Join()};
  });
  ResponseList second = ranks.Round(others_join);
  ASSERT_EQ(second.responses.size(), 1u);
  EXPECT_EQ(second.responses[0].op, OpType::kJoin);
  // Within a round ranks join in rank order: the last is the highest rank other than 1.
  EXPECT_EQ(second.responses[0].root, size() == 2 ? 0 : size() - 1);

  // After the join every rank must take part again.
  auto all_but_rank1 = PerRank(size(), [](int rank) {
    return rank == 1 ? std::vector<Request>{} : std::vector<Request>{Allreduce("y")};
  });
  EXPECT_TRUE(ranks.Round(all_but_rank1).responses.empty());
}

TEST_P(NegotiatorTest, OnlyAllreduceRunsWhileARankHasJoined) {
  SimulatedRanks ranks(size());
  Request bcast = Allreduce("b");
  bcast.op = OpType::kBroadcast;
  auto rank0_joins = PerRank(size(), [&](int rank) {
    return rank == 0 ? std::vector<Request>{Join()} : std::vector<Request>{bcast};
  });
  ResponseList decided = ranks.Round(rank0_joins);
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kError);
  EXPECT_NE(
      decided.responses[0].error_message.find("broadcast 'b' cannot run while rank 0 has joined"),
      std::string::npos)
      << decided.responses[0].error_message;
}

TEST_P(NegotiatorTest, AGroupIsReleasedOnlyWhenAllItsMembersAreReady) {
  SimulatedRanks ranks(size());
  auto member = [](int i) {
    Request r = Allreduce("group." + std::to_string(i));
    r.group = "g";
    r.group_size = 3;
    return r;
  };
  EXPECT_TRUE(
      ranks.Round(Everyone(size(), {member(0), member(1), Allreduce("solo")})).responses.size() ==
      1u)
      << "only the ungrouped tensor may run";
  ResponseList decided = ranks.Round(Everyone(size(), {member(2)}));
  ASSERT_EQ(decided.responses.size(), 1u) << "the whole group, fused";
  EXPECT_EQ(decided.responses[0].names,
            (std::vector<std::string>{"group.0", "group.1", "group.2"}));
  EXPECT_EQ(decided.responses[0].tensor_sizes, (std::vector<int64_t>{4, 4, 4}));
}

TEST_P(NegotiatorTest, AStalledNameFailsOnEveryRankWithTheReportAndLaterNamesRun) {
  StallSettings stall;
  stall.check_seconds = 1;
  stall.shutdown_seconds = 2;
  SimulatedRanks ranks(size(), kDefaultThreshold, std::chrono::seconds(10), stall);
  EXPECT_TRUE(ranks.Round(AllBut(size(), 1, Allreduce("skipped"))).responses.empty());
  ranks.Advance(std::chrono::milliseconds(1500));
  EXPECT_TRUE(ranks.Round(Nobody(size())).responses.empty()) << "reported, not failed yet";
  ranks.Advance(std::chrono::seconds(1));
  // Round() checks that every rank got the same decision.
  ResponseList decided = ranks.Round(Nobody(size()));
  ASSERT_EQ(decided.responses.size(), 1u);
  const Response& error = decided.responses[0];
  EXPECT_EQ(error.kind, Response::Kind::kError);
  EXPECT_EQ(error.names, std::vector<std::string>{"skipped"});
  for (const char* part :
       {"fail (HORDE_STALL_SHUTDOWN_TIME_SECONDS=2)",
        "\n  rank 1 has not submitted allreduce 'skipped' (waiting 2.5 s)\n", "likely causes:"}) {
    EXPECT_NE(error.error_message.find(part), std::string::npos) << error.error_message;
  }
  EXPECT_EQ(ranks.pending_on_coordinator(), 0u);

  decided = ranks.Round(Everyone(size(), {Allreduce("next")}));
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kCollective);
  EXPECT_EQ(decided.responses[0].names, std::vector<std::string>{"next"});
}

TEST_P(NegotiatorTest, WithoutAShutdownTimeAStalledNameWaitsAndRunsOnceEveryRankAsks) {
  StallSettings stall;
  stall.check_seconds = 1;
  SimulatedRanks ranks(size(), kDefaultThreshold, std::chrono::seconds(10), stall);
  EXPECT_TRUE(ranks.Round(AllBut(size(), 1, Allreduce("late"))).responses.empty());
  for (int i = 0; i < 5; ++i) {
    ranks.Advance(std::chrono::seconds(60));
    EXPECT_TRUE(ranks.Round(Nobody(size())).responses.empty());
  }
  ResponseList decided = ranks.Round(Only(size(), 1, Allreduce("late")));
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kCollective);
}

TEST_P(NegotiatorTest, ARankWaitingInJoinIsNotStalled) {
  StallSettings stall;
  stall.check_seconds = 1;
  stall.shutdown_seconds = 2;
  SimulatedRanks ranks(size(), kDefaultThreshold, std::chrono::seconds(10), stall);
  auto rank1_joins = PerRank(size(), [](int rank) {
    return rank == 1 ? std::vector<Request>{Join()} : std::vector<Request>{};
  });
  EXPECT_TRUE(ranks.Round(rank1_joins).responses.empty());
  for (int i = 0; i < 5; ++i) {
    ranks.Advance(std::chrono::seconds(60));
    EXPECT_TRUE(ranks.Round(Nobody(size())).responses.empty()) << "nothing failed";
  }
  auto others_join = PerRank(size(), [](int rank) {
    return rank == 1 ? std::vector<Request>{} : std::vector<Request>{Join()};
  });
  ResponseList decided = ranks.Round(others_join);
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].op, OpType::kJoin);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NegotiatorTest, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

}  // namespace
}  // namespace horde

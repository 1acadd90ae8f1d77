// The response cache's fast path, seen through whole negotiation rounds: hits cost one
// bit allreduce, every rank's cache stays identical, and anything unusual (a changed
// signature, an eviction, a stall, a join) falls back to the coordinator's slow path.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "core/negotiator.h"
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

constexpr std::chrono::seconds kTimeout(10);

void ExpectIdenticalCaches(const SimulatedRanks& ranks) {
  for (int rank = 1; rank < ranks.size(); ++rank) {
    EXPECT_EQ(ranks.negotiator(rank).cache().NamesByPosition(),
              ranks.negotiator(0).cache().NamesByPosition())
        << "rank " << rank << "'s cache differs from rank 0's";
  }
}

class NegotiatorCacheTest : public ::testing::TestWithParam<int> {
 protected:
  int size() const { return GetParam(); }
};

TEST_P(NegotiatorCacheTest, ARepeatedOperationTakesTheFastPath) {
  SimulatedRanks ranks(size());
  ResponseList first = ranks.Round(Everyone(size(), {Allreduce("w")}));
  ASSERT_EQ(first.responses.size(), 1u);
  EXPECT_EQ(ranks.negotiator(0).slow_rounds(), 1);

  ResponseList second = ranks.Round(Everyone(size(), {Allreduce("w")}));
  ASSERT_EQ(second.responses.size(), 1u);
  EXPECT_EQ(second.responses[0].names, std::vector<std::string>{"w"});
  EXPECT_EQ(second.responses[0].tensor_sizes, std::vector<int64_t>{4});
  EXPECT_EQ(ranks.negotiator(0).slow_rounds(), 1) << "a hit needs no gather";
  EXPECT_EQ(ranks.negotiator(0).fast_path_responses(), 1);
}

TEST_P(NegotiatorCacheTest, CachedHitsWaitForEveryRankAndAreFused) {
  SimulatedRanks ranks(size());
  ranks.Round(Everyone(size(), {Allreduce("a"), Allreduce("b")}));
  EXPECT_TRUE(ranks.Round(AllBut(size(), 1, Allreduce("a"))).responses.empty());
  EXPECT_EQ(ranks.Round(Everyone(size(), {Allreduce("b")})).responses.size(), 1u);
  ResponseList decided = ranks.Round(Only(size(), 1, Allreduce("a")));
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].names, std::vector<std::string>{"a"});

  ResponseList both = ranks.Round(Everyone(size(), {Allreduce("a"), Allreduce("b")}));
  ASSERT_EQ(both.responses.size(), 1u) << "two cached allreduces of one dtype fuse";
  EXPECT_EQ(both.responses[0].names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ranks.negotiator(0).slow_rounds(), 1);
}

TEST_P(NegotiatorCacheTest, AChangedShapeOnOneRankIsCaughtByTheSlowPathChecks) {
  SimulatedRanks ranks(size());
  ranks.Round(Everyone(size(), {Allreduce("w")}));
  auto changed = PerRank(size(), [](int rank) {
    return std::vector<Request>{Allreduce("w", DataType::kFloat32, {rank == 1 ? 5 : 4})};
  });
  ResponseList decided = ranks.Round(changed);
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kError);
  EXPECT_NE(decided.responses[0].error_message.find("shape"), std::string::npos)
      << decided.responses[0].error_message;
  EXPECT_EQ(ranks.negotiator(0).cache().size(), 0u) << "the entry was evicted everywhere";
  ExpectIdenticalCaches(ranks);

  ResponseList again = ranks.Round(Everyone(size(), {Allreduce("w", DataType::kFloat32, {5})}));
  ASSERT_EQ(again.responses.size(), 1u);
  EXPECT_EQ(again.responses[0].kind, Response::Kind::kCollective);
  EXPECT_EQ(again.responses[0].tensor_sizes, std::vector<int64_t>{5});
}

TEST_P(NegotiatorCacheTest, AChangeOnARankThatSubmitsLaterStillReachesTheChecks) {
  SimulatedRanks ranks(size());
  ranks.Round(Everyone(size(), {Allreduce("w")}));
  // Rank 0 waits on its hit; rank 1 then submits the name with another dtype.
  EXPECT_TRUE(ranks.Round(AllBut(size(), 1, Allreduce("w"))).responses.empty());
  ResponseList decided = ranks.Round(Only(size(), 1, Allreduce("w", DataType::kFloat64)));
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kError);
  EXPECT_NE(decided.responses[0].error_message.find("dtype"), std::string::npos);
  ExpectIdenticalCaches(ranks);
}

TEST_P(NegotiatorCacheTest, AHitWhoseEntryIsEvictedGoesThroughTheSlowPath) {
  SimulatedRanks ranks(size(), kDefaultThreshold, kTimeout, StallSettings(), 1);
  ranks.Round(Everyone(size(), {Allreduce("a")}));
  EXPECT_TRUE(ranks.Round(AllBut(size(), 1, Allreduce("a"))).responses.empty());
  // "b" takes the only slot, so rank 0's waiting "a" is no longer a hit.
  ResponseList b = ranks.Round(Everyone(size(), {Allreduce("b")}));
  ASSERT_EQ(b.responses.size(), 1u);
  EXPECT_EQ(ranks.negotiator(0).cache().NamesByPosition(), std::vector<std::string>{"b"});
  ResponseList a = ranks.Round(Only(size(), 1, Allreduce("a")));
  ASSERT_EQ(a.responses.size(), 1u);
  EXPECT_EQ(a.responses[0].names, std::vector<std::string>{"a"});
  ExpectIdenticalCaches(ranks);
}

TEST_P(NegotiatorCacheTest, AStalledHitReachesTheStallInspector) {
  StallSettings stall;
  stall.check_seconds = 2;
  stall.shutdown_seconds = 4;
  SimulatedRanks ranks(size(), kDefaultThreshold, kTimeout, stall);
  ranks.Round(Everyone(size(), {Allreduce("w")}));
  EXPECT_TRUE(ranks.Round(AllBut(size(), 1, Allreduce("w"))).responses.empty());
  ResponseList failed;
  for (int second = 0; second < 10 && failed.responses.empty(); ++second) {
    ranks.Advance(std::chrono::seconds(1));
    failed = ranks.Round(Nobody(size()));
  }
  ASSERT_EQ(failed.responses.size(), 1u);
  EXPECT_EQ(failed.responses[0].kind, Response::Kind::kError);
  EXPECT_NE(failed.responses[0].error_message.find("rank 1"), std::string::npos)
      << failed.responses[0].error_message;
  ExpectIdenticalCaches(ranks);
}

TEST_P(NegotiatorCacheTest, WhileARankIsJoinedCachedNamesRunWithItsZeros) {
  SimulatedRanks ranks(size());
  ranks.Round(Everyone(size(), {Allreduce("w")}));
  auto rank1_joins = PerRank(size(), [](int rank) {
    return rank == 1 ? std::vector<Request>{Join()} : std::vector<Request>{Allreduce("w")};
  });
  ResponseList decided = ranks.Round(rank1_joins);
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].names, std::vector<std::string>{"w"});
  auto others_join = PerRank(size(), [](int rank) {
    return rank == 1 ? std::vector<Request>{} : std::vector<Request>{Join()};
  });
  ResponseList joined = ranks.Round(others_join);
  ASSERT_EQ(joined.responses.size(), 1u);
  EXPECT_EQ(joined.responses[0].op, OpType::kJoin);
  const int64_t slow = ranks.negotiator(0).slow_rounds();
  ASSERT_EQ(ranks.Round(Everyone(size(), {Allreduce("w")})).responses.size(), 1u);
  EXPECT_EQ(ranks.negotiator(0).slow_rounds(), slow) << "after the join, the cache serves again";
  ExpectIdenticalCaches(ranks);
}

TEST_P(NegotiatorCacheTest, CapacityZeroNegotiatesEverythingOnTheSlowPath) {
  SimulatedRanks ranks(size(), kDefaultThreshold, kTimeout, StallSettings(), 0);
  for (int step = 0; step < 3; ++step) {
    ASSERT_EQ(ranks.Round(Everyone(size(), {Allreduce("w")})).responses.size(), 1u);
  }
  EXPECT_EQ(ranks.negotiator(0).slow_rounds(), 3);
  EXPECT_EQ(ranks.negotiator(0).fast_path_responses(), 0);
}

// Thousands of rounds of a changing tensor set: each rank submits each step's names
// in its own random rounds, some shapes change, the cache is small enough to evict.
// Every round must decide identically everywhere (SimulatedRanks::Round checks), every
// submission must complete exactly once, and the caches must stay identical.
TEST_P(NegotiatorCacheTest, CachesAgreeOverThousandsOfRoundsOfChangingTensorSets) {
  SimulatedRanks ranks(size(), 1024, kTimeout, StallSettings(), 8);
  std::mt19937 random(1234 + size());
  int rounds = 0;
  for (int step = 0; step < 400; ++step) {
    // This step's names (a varying subset of 12) and shapes (occasionally changed).
    std::vector<Request> step_requests;
    for (int t = 0; t < 12; ++t) {
      if (random() % 4 == 0) continue;
      const int64_t elements = random() % 20 == 0 ? 8 : 4;
      step_requests.push_back(Allreduce("t" + std::to_string(t), DataType::kFloat32, {elements}));
    }
    // Each rank submits each request in one of the next 3 rounds, chosen at random.
    std::vector<std::vector<std::vector<Request>>> by_round(
        3, std::vector<std::vector<Request>>(size()));
    for (const Request& request : step_requests) {
      for (int rank = 0; rank < size(); ++rank) by_round[random() % 3][rank].push_back(request);
    }
    std::multiset<std::string> completed;
    for (int r = 0; r < 3 || completed.size() < step_requests.size(); ++r) {
      ASSERT_LT(r, 10) << "step " << step << " did not complete";
      auto lists = PerRank(
          size(), [&](int rank) { return r < 3 ? by_round[r][rank] : std::vector<Request>{}; });
      for (const Response& response : ranks.Round(lists).responses) {
        ASSERT_EQ(response.kind, Response::Kind::kCollective) << response.error_message;
        for (const std::string& name : response.names) completed.insert(name);
      }
      ++rounds;
    }
    ASSERT_EQ(completed.size(), step_requests.size()) << "step " << step;
    for (const Request& request : step_requests) EXPECT_EQ(completed.count(request.name), 1u);
    ExpectIdenticalCaches(ranks);
  }
  EXPECT_GE(rounds, 1200);
  EXPECT_GT(ranks.negotiator(0).fast_path_responses(), 0);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NegotiatorCacheTest, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

}  // namespace
}  // namespace horde

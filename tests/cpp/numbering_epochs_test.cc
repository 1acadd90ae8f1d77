#include "core/numbering_epochs.h"

#include <gtest/gtest.h>

#include "tests/cpp/simulated_ranks.h"

namespace horde {
namespace {

using testing::Allreduce;
using testing::Nobody;
using testing::PerRank;
using testing::SimulatedRanks;

Request Numbered(const std::string& name, int32_t epoch) {
  Request r = Allreduce(name);
  r.numbering_epoch = epoch;
  return r;
}

// Every rank's list is sent from `epochs[rank]`.
std::vector<RequestList> InEpochs(std::vector<RequestList> lists,
                                  const std::vector<int32_t>& epochs) {
  for (size_t r = 0; r < lists.size(); ++r) lists[r].numbering_epoch = epochs[r];
  return lists;
}

class NumberingEpochsTest : public ::testing::TestWithParam<int> {
 protected:
  int size() const { return GetParam(); }
  std::vector<int32_t> AllIn(int32_t epoch) const { return std::vector<int32_t>(size(), epoch); }
};

TEST_P(NumberingEpochsTest, ANumberedNameARankMovedPastFailsAtOnce) {
  SimulatedRanks ranks(size());
  // Every rank but the last submits allreduce #3 of epoch 0; the last raised before it.
  const int last = size() - 1;
  auto lists = PerRank(size(), [&](int r) {
    return r == last ? std::vector<Request>{}
                     : std::vector<Request>{Numbered("allreduce.noname.3", 0)};
  });
  EXPECT_TRUE(ranks.Round(InEpochs(lists, AllIn(0))).responses.empty());
  // The last rank reaches init()/barrier: epoch 1, and submits its next unnamed op.
  std::vector<int32_t> epochs = AllIn(0);
  epochs[last] = 1;
  auto next = PerRank(size(), [&](int r) {
    return r == last ? std::vector<Request>{Numbered("allreduce.noname.0.e1", 1)}
                     : std::vector<Request>{};
  });
  ResponseList decided = ranks.Round(InEpochs(next, epochs));
  ASSERT_EQ(decided.responses.size(), 1u);
  const Response& error = decided.responses[0];
  EXPECT_EQ(error.kind, Response::Kind::kError);
  EXPECT_EQ(error.names, std::vector<std::string>{"allreduce.noname.3"});
  EXPECT_NE(error.error_message.find("rank " + std::to_string(last) +
                                     " has passed a point where "
                                     "unnamed operations are numbered anew"),
            std::string::npos)
      << error.error_message;
  // The new epoch's operation waits for the others, which catch up and pair with it.
  EXPECT_EQ(ranks.pending_on_coordinator(), 1u);
  auto caught_up = PerRank(size(), [&](int r) {
    return r == last ? std::vector<Request>{}
                     : std::vector<Request>{Numbered("allreduce.noname.0.e1", 1)};
  });
  decided = ranks.Round(InEpochs(caught_up, AllIn(1)));
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kCollective);
}

TEST_P(NumberingEpochsTest, ARankStillInTheEpochIsWaitedFor) {
  SimulatedRanks ranks(size());
  auto lists = PerRank(size(), [&](int r) {
    return r == 0 ? std::vector<Request>{Numbered("allreduce.noname.0", 0)}
                  : std::vector<Request>{};
  });
  EXPECT_TRUE(ranks.Round(InEpochs(lists, AllIn(0))).responses.empty());
  EXPECT_TRUE(ranks.Round(InEpochs(Nobody(size()), AllIn(0))).responses.empty());
  EXPECT_EQ(ranks.pending_on_coordinator(), 1u);
}

TEST_P(NumberingEpochsTest, AnOldEpochsRequestSentWithTheNewEpochStillPairs) {
  SimulatedRanks ranks(size());
  auto lists = PerRank(size(), [&](int r) {
    return r == 0 ? std::vector<Request>{Numbered("allreduce.noname.0", 0)}
                  : std::vector<Request>{};
  });
  EXPECT_TRUE(ranks.Round(InEpochs(lists, AllIn(0))).responses.empty());
  // The other ranks submit it, pass a barrier and start epoch 1, all before one round.
  auto late = PerRank(size(), [&](int r) {
    return r == 0 ? std::vector<Request>{}
                  : std::vector<Request>{Numbered("allreduce.noname.0", 0),
                                         Numbered("allreduce.noname.0.e1", 1)};
  });
  std::vector<int32_t> epochs = AllIn(1);
  epochs[0] = 0;
  ResponseList decided = ranks.Round(InEpochs(late, epochs));
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kCollective);
  EXPECT_EQ(decided.responses[0].names, std::vector<std::string>{"allreduce.noname.0"});
}

TEST_P(NumberingEpochsTest, NamedOperationsAreNeverFailedByEpochs) {
  SimulatedRanks ranks(size());
  auto lists = PerRank(size(), [&](int r) {
    return r == 0 ? std::vector<Request>{Allreduce("grad.w")} : std::vector<Request>{};
  });
  std::vector<int32_t> epochs = AllIn(5);
  epochs[0] = 0;
  EXPECT_TRUE(ranks.Round(InEpochs(lists, epochs)).responses.empty());
  EXPECT_EQ(ranks.pending_on_coordinator(), 1u);
}

TEST_P(NumberingEpochsTest, ANewEpochReachesTheCoordinatorWhenEverythingElseIsCached) {
  SimulatedRanks ranks(size());
  const auto step = PerRank(size(), [](int) { return std::vector<Request>{Allreduce("grad.w")}; });
  ranks.Round(InEpochs(step, AllIn(0)));
  ranks.Round(InEpochs(step, AllIn(0)));  // a cache hit: no slow round
  const int64_t slow = ranks.negotiator(0).slow_rounds();
  ranks.Round(InEpochs(step, AllIn(0)));
  EXPECT_EQ(ranks.negotiator(0).slow_rounds(), slow);
  ranks.Round(InEpochs(step, AllIn(1)));
  EXPECT_EQ(ranks.negotiator(0).slow_rounds(), slow + 1);
  ranks.Round(InEpochs(step, AllIn(1)));
  EXPECT_EQ(ranks.negotiator(0).slow_rounds(), slow + 1);
}

INSTANTIATE_TEST_SUITE_P(Ranks, NumberingEpochsTest, ::testing::Values(2, 3, 4));

}  // namespace
}  // namespace horde

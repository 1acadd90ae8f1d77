// The coordinator's side of join: which ranks have joined, when the join completes and
// with which last rank, and which operations may run meanwhile.
#include "core/joined_ranks.h"

#include <gtest/gtest.h>

#include "core/message_table.h"

namespace horde {
namespace {

Request Ask(OpType op, int rank, const std::string& name = "x") {
  Request r;
  r.op = op;
  r.rank = rank;
  r.name = name;
  r.shape = {4};
  return r;
}

TEST(JoinedRanks, ListsTheJoinedRanksInRankOrderAndIgnoresRepeatsAndStrangers) {
  JoinedRanks joined(4);
  EXPECT_TRUE(joined.ranks().empty());
  for (int rank : {3, 1, 3, -1, 4}) joined.Join(rank);
  EXPECT_EQ(joined.ranks(), (std::vector<int>{1, 3}));
  EXPECT_TRUE(joined.Has(1));
  EXPECT_FALSE(joined.Has(0));
}

TEST(JoinedRanks, CompletesOnceEveryRankHasJoinedNamingTheLastToJoin) {
  JoinedRanks joined(3);
  for (int rank : {2, 0}) {
    joined.Join(rank);
    EXPECT_FALSE(joined.TakeCompletion().has_value()) << "after rank " << rank;
  }
  joined.Join(2);  // a repeat is not the last to join
  joined.Join(1);
  std::optional<Response> join = joined.TakeCompletion();
  ASSERT_TRUE(join.has_value());
  EXPECT_EQ(join->op, OpType::kJoin);
  EXPECT_EQ(join->kind, Response::Kind::kCollective);
  EXPECT_EQ(join->names, std::vector<std::string>{kJoinName});
  EXPECT_EQ(join->root, 1);
  // Every rank is active again, for the next join too.
  EXPECT_TRUE(joined.ranks().empty());
  EXPECT_FALSE(joined.TakeCompletion().has_value());
  for (int rank : {1, 2, 0}) joined.Join(rank);
  EXPECT_EQ(joined.TakeCompletion()->root, 0);
}

TEST(JoinedRanks, OnlyOpsThatRunWithJoinedRanksMayRunWhileRanksHaveJoined) {
  std::string error;
  EXPECT_TRUE(RunsWithJoinedRanks(Ask(OpType::kBroadcast, 0), {}, RankNames(), &error));
  EXPECT_TRUE(RunsWithJoinedRanks(Ask(OpType::kAllreduce, 0), {1}, RankNames(), &error));
  EXPECT_EQ(error, "");
  EXPECT_FALSE(RunsWithJoinedRanks(Ask(OpType::kAllgather, 0), {1, 2}, RankNames(), &error));
  EXPECT_EQ(error,
            "allgather 'x' cannot run while ranks 1,2 have joined; only allreduce proceeds with "
            "joined ranks (they contribute the identity of its reduce op)");
  // A process set's ranks are named by their world ranks.
  EXPECT_FALSE(RunsWithJoinedRanks(Ask(OpType::kBroadcast, 0), {1}, RankNames({2, 7}), &error));
  EXPECT_NE(error.find("broadcast 'x' cannot run while rank 7 has joined"), std::string::npos)
      << error;
}

TEST(JoinedRanks, TheMessageTableCountsJoinedRanksAsPresentUntilTheJoinCompletes) {
  MessageTable table(3);
  table.Join(2);
  table.Add(Ask(OpType::kAllreduce, 0, "a"), SteadyTime());
  table.Add(Ask(OpType::kAllreduce, 1, "a"), SteadyTime());
  table.Add(Ask(OpType::kAllreduce, 0, "b"), SteadyTime());
  EXPECT_EQ(table.joined().ranks(), std::vector<int>{2});
  std::vector<std::vector<Request>> ready = table.TakeReady();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0][0].name, "a");
  EXPECT_EQ(ready[0].size(), 2u) << "the joined rank sent no request";
  ASSERT_EQ(table.Waiting().size(), 1u);
  EXPECT_EQ(table.Waiting()[0].missing, std::vector<int>{1}) << "a joined rank is never missing";

  table.Join(0);
  table.Join(1);
  ASSERT_TRUE(table.joined().TakeCompletion().has_value());
  EXPECT_EQ(table.Waiting()[0].missing, (std::vector<int>{1, 2}));
  table.Add(Ask(OpType::kAllreduce, 1, "b"), SteadyTime());
  EXPECT_TRUE(table.TakeReady().empty()) << "rank 2 must ask again after the join";
}

}  // namespace
}  // namespace horde

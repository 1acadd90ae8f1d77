#include "core/rank_names.h"

#include <gtest/gtest.h>

#include "core/response_builder.h"
#include "core/stall_inspector.h"

namespace horde {
namespace {

TEST(RankNames, TheWorldNamesRanksAsTheyAre) {
  const RankNames world;
  EXPECT_EQ(world.World(5), 5);
  EXPECT_EQ(world.One(5), "rank 5");
  EXPECT_EQ(world.List({3}), "rank 3");
  EXPECT_EQ(world.List({4, 1}), "ranks 1,4");
  EXPECT_EQ(world.List({9, 0, 1, 2, 3, 4, 5, 6, 7}), "ranks 0-7,9");
}

TEST(RankNames, AProcessSetNamesItsRanksByTheirWorldRanks) {
  const RankNames set({1, 4, 5, 6});
  EXPECT_EQ(set.World(0), 1);
  EXPECT_EQ(set.One(3), "rank 6");
  EXPECT_EQ(set.List({0, 1}), "ranks 1,4");
  EXPECT_EQ(set.List({3, 1, 2}), "ranks 4-6");
}

Request Broadcast(int rank, int root, DataType dtype) {
  Request r;
  r.rank = rank;
  r.name = "b";
  r.op = OpType::kBroadcast;
  r.dtype = dtype;
  r.shape = {2};
  r.root = root;
  return r;
}

TEST(RankNames, MismatchErrorsOfASetNameWorldRanksAndWorldRoots) {
  const RankNames set({2, 7});
  Response dtypes = BuildResponse(
      {Broadcast(0, 1, DataType::kFloat32), Broadcast(1, 1, DataType::kInt32)}, {}, set);
  EXPECT_EQ(dtypes.error_message,
            "ranks disagree on the dtype of broadcast 'b': float32 on rank 2; int32 on rank 7");
  Response roots = BuildResponse(
      {Broadcast(0, 0, DataType::kFloat32), Broadcast(1, 1, DataType::kFloat32)}, {}, set);
  EXPECT_EQ(roots.error_message,
            "ranks disagree on the root rank of broadcast 'b': 2 on rank 2; 7 on rank 7");
  Request from_a = Broadcast(0, 1, DataType::kFloat32), from_b = Broadcast(1, 1, DataType::kInt32);
  from_a.call_site = "a.py:3";
  from_b.call_site = "b.py:4";
  EXPECT_EQ(BuildResponse({from_a, from_b}, {}, set).error_message,
            "ranks disagree on the dtype of broadcast 'b': float32 on rank 2; int32 on rank 7 "
            "(rank 2 called it at a.py:3, rank 7 at b.py:4)");
  Response joined = BuildResponse({Broadcast(0, 0, DataType::kFloat32)}, {1}, set);
  EXPECT_NE(joined.error_message.find("while rank 7 has joined"), std::string::npos)
      << joined.error_message;
}

TEST(RankNames, StallReportsOfASetNameWorldRanks) {
  MessageTable table(3);
  Request r;
  r.name = "x";
  r.shape = {4};
  r.call_site = "train.py:5";
  for (int rank : {0, 1}) {
    r.rank = rank;
    table.Add(r, SteadyTime());
  }
  StallSettings settings;
  settings.check_seconds = 1;
  StallInspector inspector(settings, RankNames({3, 5, 8}));
  const std::string report =
      inspector.Inspect(SteadyTime() + std::chrono::seconds(2), &table).report;
  EXPECT_NE(report.find("\n  rank 8 has not submitted allreduce 'x' (waiting 2.0 s)\n"
                        "    ranks 3,5 called allreduce 'x' at train.py:5\n"),
            std::string::npos)
      << report;
}

}  // namespace
}  // namespace horde

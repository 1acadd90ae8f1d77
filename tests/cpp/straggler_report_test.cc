// The straggler report from the ranks' waits: the rank that waits least in most rounds
// is last; it is called the straggler only when that costs the others enough.
#include "core/straggler_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace horde {
namespace {

// Each rank's window over `rounds` rounds of `seconds` wall time, its wait per round
// given by `wait(rank, round)`.
template <typename Wait>
std::vector<std::string> Windows(int ranks, int rounds, double seconds, Wait wait) {
  std::vector<std::string> encoded;
  for (int r = 0; r < ranks; ++r) {
    StragglerWindow window;
    for (int k = 0; k < rounds; ++k) {
      window.AddRound(wait(r, k), seconds * k / (rounds - 1));
    }
    encoded.push_back(window.TakeEncoded("host" + std::to_string(r)));
  }
  return encoded;
}

TEST(StragglerReport, ARankLastInEveryRoundIsTheStragglerWithItsLagAndCost) {
  // 64 rounds over 1.26 s (20 ms a step): rank 2 arrives 10 ms after the others.
  const auto waits = Windows(4, 64, 1.26, [](int r, int) { return r == 2 ? 0.0002 : 0.0102; });
  const StragglerReport report = AnalyzeWaits(waits);
  EXPECT_EQ(report.straggler, 2);
  EXPECT_EQ(report.most_often_last, 2);
  EXPECT_EQ(report.host, "host2");
  EXPECT_DOUBLE_EQ(report.share_last, 1.0);
  EXPECT_NEAR(report.lag_median_ms, 10.0, 1e-6);
  EXPECT_NEAR(report.lag_p90_ms, 10.0, 1e-6);
  // The first round's wait lies before the window (the window before counted it).
  EXPECT_NEAR(report.cost_to_others, 63 * 0.010 / 1.26, 1e-6);
  EXPECT_EQ(report.rounds, 64);
  EXPECT_NEAR(report.window_seconds, 1.26, 1e-9);
  EXPECT_NE(DescribeStraggler(report).find("rank 2 (host host2) arrived last in 100%"),
            std::string::npos)
      << DescribeStraggler(report);
}

TEST(StragglerReport, RanksTakingTurnsOrArrivingTogetherMakeNoStraggler) {
  // Whoever is last changes every round: nobody is last in more than half of them.
  const auto turns = Windows(4, 64, 1.0, [](int r, int k) { return r == k % 4 ? 0.0 : 0.005; });
  EXPECT_EQ(AnalyzeWaits(turns).straggler, -1);
  // Everyone within the tie margin: nobody is last at all.
  const auto together = Windows(2, 64, 1.0, [](int r, int) { return 0.001 + r * 20e-6; });
  const StragglerReport report = AnalyzeWaits(together);
  EXPECT_EQ(report.straggler, -1);
  EXPECT_EQ(report.most_often_last, -1);
  EXPECT_EQ(report.rounds, 64);
}

TEST(StragglerReport, ALastRankThatCostsLittleIsNotCalledAStraggler) {
  // Rank 1 is always last, by 0.5 ms per 100 ms round: 0.5% of the others' time.
  const auto waits = Windows(2, 64, 6.3, [](int r, int) { return r == 1 ? 0.0 : 0.0005; });
  const StragglerReport report = AnalyzeWaits(waits);
  EXPECT_EQ(report.most_often_last, 1);
  EXPECT_EQ(report.straggler, -1);
  EXPECT_LT(report.cost_to_others, kStragglerCost);
}

TEST(StragglerReport, OverlappingWaitsOfSuccessiveRoundsAreCountedOnce) {
  // A round every millisecond, each waiting 30 ms for rank 1 (tensors submitted during a
  // backward pass, decided one per round): the waits overlap, and rank 0 waited for
  // rank 1 for nearly all of the window, not 30 times over.
  const auto waits = Windows(2, 64, 0.063, [](int r, int) { return r == 1 ? 0.0 : 0.030; });
  StragglerReport report = AnalyzeWaits(waits);
  EXPECT_EQ(report.straggler, 1);
  EXPECT_GT(report.cost_to_others, 0.95);
  EXPECT_LE(report.cost_to_others, 1.0);
}

TEST(StragglerReport, AJoinedRankTakesNoPartAndMismatchedWindowsReportNothing) {
  // Rank 0 joined (-1: no tensors of its own): rank 2 is last among ranks 1 and 2.
  const auto waits = Windows(3, 64, 1.0, [](int r, int) {
    return r == 0 ? -1 : r == 2 ? 0 : 0.02;
  });
  EXPECT_EQ(AnalyzeWaits(waits).straggler, 2);
  auto mismatched = waits;
  mismatched[1] = Windows(1, 10, 1.0, [](int, int) { return 0.0; })[0];
  EXPECT_EQ(AnalyzeWaits(mismatched).rounds, 0);
  EXPECT_EQ(AnalyzeWaits({"garbage"}).rounds, 0);
}

TEST(StragglerReport, TheReportCrossesTheWireUnchanged) {
  StragglerReport report;
  report.straggler = 3;
  report.most_often_last = 3;
  report.host = "node-7";
  report.share_last = 0.75;
  report.lag_median_ms = 12.5;
  report.lag_p90_ms = 20.25;
  report.cost_to_others = 0.4;
  report.rounds = 64;
  report.window_seconds = 2.5;
  StragglerReport back;
  ASSERT_TRUE(DecodeReport(EncodeReport(report), &back));
  EXPECT_EQ(EncodeReport(back), EncodeReport(report));
  EXPECT_EQ(back.host, "node-7");
  EXPECT_FALSE(DecodeReport("1\t2", &back));
}

TEST(StragglerReport, AsJsonItNamesNoRankAsNullAndQuotesTheHost) {
  StragglerReport report;
  report.most_often_last = 1;
  report.host = "rack \"a\"";
  report.share_last = 0.5;
  report.rounds = 64;
  EXPECT_EQ(StragglerReportJson(report),
            "{\"straggler\":null,\"most_often_last\":1,\"host\":\"rack \\\"a\\\"\","
            "\"share_last\":0.5,\"lag_median_ms\":0,\"lag_p90_ms\":0,\"cost_to_others\":0,"
            "\"rounds\":64,\"window_seconds\":0}");
}

}  // namespace
}  // namespace horde

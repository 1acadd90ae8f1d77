#include "core/stall_inspector.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace horde {
namespace {

// Seconds since the (arbitrary) start of a test's clock.
SteadyTime At(double seconds) {
  return SteadyTime() +
         std::chrono::duration_cast<SteadyTime::duration>(std::chrono::duration<double>(seconds));
}

StallSettings Settings(double check_seconds, double shutdown_seconds = 0) {
  StallSettings settings;
  settings.check_seconds = check_seconds;
  settings.shutdown_seconds = shutdown_seconds;
  return settings;
}

// `ranks` ask for `name` at `seconds`.
void Submit(MessageTable* table, const std::string& name, std::initializer_list<int> ranks,
            double seconds, OpType op = OpType::kAllreduce) {
  for (int rank : ranks) {
    Request r;
    r.rank = rank;
    r.name = name;
    r.op = op;
    r.shape = {4};
    table->Add(r, At(seconds));
  }
}

// Each rank of `sites` asks for `name` at `seconds` from its call site ("" unknown).
void SubmitFrom(MessageTable* table, const std::string& name,
                const std::vector<std::pair<int, std::string>>& sites, double seconds,
                OpType op = OpType::kAllreduce) {
  for (const auto& [rank, site] : sites) {
    Request r;
    r.rank = rank;
    r.name = name;
    r.op = op;
    r.shape = {4};
    r.call_site = site;
    table->Add(r, At(seconds));
  }
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> Names(const std::vector<Response>& responses) {
  std::vector<std::string> names;
  for (const auto& r : responses) names.insert(names.end(), r.names.begin(), r.names.end());
  return names;
}

TEST(StallInspector, ReportsANameOnceItHasWaitedTheCheckTime) {
  MessageTable table(2);
  StallInspector inspector(Settings(60));
  Submit(&table, "x", {0}, 0);
  for (int t = 0; t < 60; ++t) {
    EXPECT_EQ(inspector.Inspect(At(t), &table).report, "") << "at " << t << " s";
  }
  StallInspector::Findings findings = inspector.Inspect(At(60.5), &table);
  const std::string& report = findings.report;
  EXPECT_TRUE(Contains(report, "stall: these operations have waited 60 s or more")) << report;
  EXPECT_TRUE(Contains(report, "\n  rank 1 has not submitted allreduce 'x' (waiting 60 s)\n"))
      << report;
  EXPECT_TRUE(Contains(report, "HORDE_STALL_SHUTDOWN_TIME_SECONDS=N makes them fail")) << report;
  EXPECT_TRUE(findings.failed.empty()) << "no shutdown time: nothing fails";
  EXPECT_EQ(table.pending(), 1u);
}

TEST(StallInspector, ReportNamesMissingRanksTensorsAndLikelyCauses) {
  MessageTable table(8);
  table.Join(7);  // a joined rank is never missing
  for (int i = 0; i < 8; ++i) Submit(&table, "g" + std::to_string(i), {0, 1, 2, 3}, i);
  Submit(&table, "b", {0, 1, 3, 4, 5, 6}, 10, OpType::kBroadcast);
  StallInspector inspector(Settings(60));
  const std::string report = inspector.Inspect(At(70), &table).report;
  // One line per set of missing ranks (the joined rank 7 in none), oldest name first.
  EXPECT_TRUE(Contains(report,
                       "\n  ranks 4-6 have not submitted allreduce 'g0', allreduce 'g1', allreduce "
                       "'g2', allreduce 'g3', allreduce 'g4' and 3 more (waiting up to 70 s)\n"
                       "  rank 2 has not submitted broadcast 'b' (waiting 60 s)\n"))
      << report;
  EXPECT_FALSE(Contains(report, "'g5'")) << "only the first few names are listed";
  for (const char* cause :
       {"likely causes:", "a rank skipped a step or took a different code path",
        "names differ across ranks", "unnamed operations", "uneven data", "hvd.join()"}) {
    EXPECT_TRUE(Contains(report, cause)) << cause << " missing from:\n" << report;
  }
}

TEST(StallInspector, PairsOfRanksAreListedAndRunsShortened) {
  MessageTable table(10);
  Submit(&table, "a", {0, 1, 3, 4, 5, 6, 7}, 0);  // missing 2,8,9
  StallInspector inspector(Settings(1));
  EXPECT_TRUE(Contains(inspector.Inspect(At(1), &table).report, "ranks 2,8,9 have not submitted"));
  MessageTable wide(10);
  Submit(&wide, "a", {0, 5}, 0);  // missing 1-4,6-9
  StallInspector inspector2(Settings(1));
  EXPECT_TRUE(
      Contains(inspector2.Inspect(At(1), &wide).report, "ranks 1-4,6-9 have not submitted"));
}

TEST(StallInspector, ListsTheFirstSetsOfMissingRanksAndCountsTheRest) {
  // One name missing on each rank but 0, the name missing on rank r the r-th oldest.
  const int size = static_cast<int>(StallInspector::kMaxLines) + 2;
  MessageTable table(size);
  for (int missing = 1; missing < size; ++missing) {
    for (int rank = 0; rank < size; ++rank) {
      if (rank != missing) Submit(&table, "n" + std::to_string(missing), {rank}, missing);
    }
  }
  StallInspector inspector(Settings(60));
  const std::string report = inspector.Inspect(At(100000), &table).report;
  EXPECT_TRUE(Contains(report, "\n  rank 1 has not submitted allreduce 'n1' (waiting 99999 s)\n"))
      << report;
  const int last_listed = static_cast<int>(StallInspector::kMaxLines);
  EXPECT_TRUE(Contains(report, "rank " + std::to_string(last_listed) + " has")) << report;
  EXPECT_FALSE(Contains(report, "rank " + std::to_string(last_listed + 1) + " has")) << report;
  EXPECT_TRUE(Contains(report, "\n  and 1 more operation that other ranks have not submitted\n"))
      << report;
}

TEST(StallInspector, RepeatsAtMostOncePerCheckTime) {
  MessageTable table(2);
  StallInspector inspector(Settings(10));
  Submit(&table, "x", {0}, 0);
  std::vector<int> reported_at;
  for (int t = 0; t <= 35; ++t) {
    if (!inspector.Inspect(At(t), &table).report.empty()) reported_at.push_back(t);
  }
  EXPECT_EQ(reported_at, (std::vector<int>{10, 20, 30}));
}

TEST(StallInspector, LooksAgainExactlyWhenANameReachesALimit) {
  MessageTable table(2);
  StallInspector inspector(Settings(1, 2));
  Submit(&table, "x", {0}, 0);
  EXPECT_EQ(inspector.Inspect(At(0), &table).report, "");
  EXPECT_EQ(inspector.next_due(), At(1));
  EXPECT_EQ(inspector.Inspect(At(0.999), &table).report, "");
  EXPECT_TRUE(Contains(inspector.Inspect(At(1), &table).report, "have waited 1 s or more"));
  EXPECT_EQ(inspector.next_due(), At(2)) << "the failure, before a repeated report";
  StallInspector::Findings early = inspector.Inspect(At(1.999), &table);
  EXPECT_EQ(early.report, "");
  EXPECT_TRUE(early.failed.empty());
  StallInspector::Findings due = inspector.Inspect(At(2), &table);
  EXPECT_EQ(Names(due.failed), std::vector<std::string>{"x"});
  EXPECT_EQ(inspector.Inspect(At(3), &table).report, "");
  EXPECT_EQ(inspector.next_due(), SteadyTime::max()) << "nothing left to watch";
}

TEST(StallInspector, ANewNameBringsTheNextLookForward) {
  MessageTable table(2);
  StallInspector inspector(Settings(10, 20));
  EXPECT_EQ(inspector.Inspect(At(0), &table).report, "");
  Submit(&table, "x", {0}, 5);
  inspector.Noted(At(5));
  EXPECT_EQ(inspector.next_due(), At(15));
  Submit(&table, "y", {0}, 6);
  inspector.Noted(At(6));
  EXPECT_EQ(inspector.next_due(), At(15)) << "the earlier name's limit comes first";
}

TEST(StallInspector, AgeCountsFromTheEarliestSubmissionTheRequestsCarry) {
  MessageTable table(3);
  Request r;
  r.name = "cached";
  r.shape = {4};
  r.rank = 1;
  r.waited_microseconds = 2000000;  // rank 1 submitted it 2 s before it reached the table
  table.Add(r, At(10));
  r.rank = 0;
  r.waited_microseconds = 7500000;  // rank 0 submitted it 7.5 s before
  table.Add(r, At(10.5));
  ASSERT_EQ(table.Waiting().size(), 1u);
  EXPECT_EQ(table.Waiting()[0].first_requested, At(3));
  StallInspector inspector(Settings(5, 0));
  inspector.Noted(SubmittedAt(r, At(10.5)));
  EXPECT_TRUE(Contains(inspector.Inspect(At(10.5), &table).report,
                       "rank 2 has not submitted allreduce 'cached' (waiting 7.5 s)"));
}

TEST(StallInspector, AShutdownTimeBelowTheCheckTimeFailsWithoutAWarningFirst) {
  MessageTable table(2);
  StallInspector inspector(Settings(20, 3));
  Submit(&table, "x", {0}, 0);
  EXPECT_EQ(inspector.Inspect(At(0), &table).report, "");
  EXPECT_EQ(inspector.next_due(), At(3));
  StallInspector::Findings findings = inspector.Inspect(At(3), &table);
  EXPECT_TRUE(Contains(findings.report, "waited 3 s or more")) << findings.report;
  EXPECT_EQ(Names(findings.failed), std::vector<std::string>{"x"});
}

TEST(StallInspector, DisabledReportsAndFailsNothing) {
  MessageTable table(2);
  StallSettings settings = Settings(1, 2);
  settings.enabled = false;
  StallInspector inspector(settings);
  Submit(&table, "x", {0}, 0);
  for (int t = 0; t < 1000; t += 7) {
    StallInspector::Findings findings = inspector.Inspect(At(t), &table);
    EXPECT_EQ(findings.report, "");
    EXPECT_TRUE(findings.failed.empty());
  }
  EXPECT_EQ(table.pending(), 1u);
}

TEST(StallInspector, FailsNamesPastTheShutdownTimeWithTheReportAndKeepsTheRest) {
  MessageTable table(3);
  StallInspector inspector(Settings(1, 5));
  Submit(&table, "old", {0, 2}, 0);
  Submit(&table, "old.bcast", {0}, 0.5, OpType::kBroadcast);
  Submit(&table, "young", {0}, 3);
  StallInspector::Findings findings = inspector.Inspect(At(5.5), &table);
  const std::string& report = findings.report;
  EXPECT_TRUE(Contains(report,
                       "stall: these operations waited 5 s or more for ranks that have not "
                       "submitted them, and fail (HORDE_STALL_SHUTDOWN_TIME_SECONDS=5) on every "
                       "rank: now on the ranks that did, on the others as they submit them:\n"
                       "  rank 1 has not submitted allreduce 'old' (waiting 5.5 s)\n"
                       "  ranks 1,2 have not submitted broadcast 'old.bcast' (waiting 5.0 s)\n"
                       "likely causes:"))
      << report;
  EXPECT_FALSE(Contains(report, "young")) << "not failed, so not in the failure report";
  ASSERT_EQ(findings.failed.size(), 2u);
  for (const Response& error : findings.failed) {
    EXPECT_EQ(error.kind, Response::Kind::kError);
    EXPECT_EQ(error.error_message, report) << "the error is the report the log shows";
  }
  // Each fails on the ranks that asked; the coordinator fails the others' when they do.
  EXPECT_EQ(findings.failed[0].ranks, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(findings.failed[1].ranks, (std::vector<int64_t>{0}));
  EXPECT_EQ(Names(findings.failed), (std::vector<std::string>{"old", "old.bcast"}));
  EXPECT_EQ(findings.failed[1].op, OpType::kBroadcast);
  std::vector<PendingName> left = table.Waiting();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].name, "young");
  // The next look reports the name still waiting, and later fails it too.
  EXPECT_TRUE(Contains(inspector.Inspect(At(6.5), &table).report,
                       "ranks 1,2 have not submitted allreduce 'young' (waiting 3.5 s)"));
  EXPECT_EQ(Names(inspector.Inspect(At(8), &table).failed), std::vector<std::string>{"young"});
  EXPECT_EQ(table.pending(), 0u);
}

TEST(StallInspector, FailingOneMemberOfAGroupFailsTheWholeGroup) {
  MessageTable table(2);
  auto member = [](int i, int rank) {
    Request r;
    r.rank = rank;
    r.name = "g." + std::to_string(i);
    r.group = "g";
    r.group_size = 3;
    return r;
  };
  for (int rank : {0, 1}) {
    table.Add(member(0, rank), At(0));
    table.Add(member(1, rank), At(0));
  }
  table.Add(member(2, 0), At(0));
  Submit(&table, "other", {0}, 0);
  EXPECT_TRUE(table.TakeReady().empty()) << "the group waits for its last member";
  StallInspector inspector(Settings(1, 2));
  StallInspector::Findings findings = inspector.Inspect(At(2), &table);
  // Only g.2 is stalled (and listed); g.0 and g.1 could never run without it.
  EXPECT_TRUE(
      Contains(findings.report, "rank 1 has not submitted allreduce 'g.2', allreduce 'other'"))
      << findings.report;
  EXPECT_FALSE(Contains(findings.report, "'g.0'")) << findings.report;
  EXPECT_EQ(Names(findings.failed), (std::vector<std::string>{"g.0", "g.1", "g.2", "other"}));
  EXPECT_EQ(table.pending(), 0u);
}

TEST(StallInspector, NamesEveryActiveRankAskedForAreNotStalled) {
  MessageTable table(3);
  table.Join(2);
  Submit(&table, "x", {0, 1}, 0);  // rank 2 has joined: ready, not stalled
  Submit(&table, "y", {0}, 0);
  StallInspector inspector(Settings(1));
  const std::string report = inspector.Inspect(At(5), &table).report;
  EXPECT_TRUE(Contains(report, "\n  rank 1 has not submitted allreduce 'y' (waiting 5.0 s)\n"))
      << report;
  EXPECT_FALSE(Contains(report, "'x'")) << report;
}

TEST(StallInspector, SaysWhereTheRanksThatSubmittedANameCalledIt) {
  MessageTable table(5);
  SubmitFrom(&table, "x", {{0, "train.py:57"}, {2, "train.py:57"}, {3, "eval.py:9"}, {4, ""}}, 0);
  StallInspector inspector(Settings(60));
  const std::string report = inspector.Inspect(At(61), &table).report;
  // Identical sites share a line's entry, by ranks; a rank with no known site is left out.
  EXPECT_TRUE(Contains(report,
                       "\n  rank 1 has not submitted allreduce 'x' (waiting 61 s)\n"
                       "    ranks 0,2 called allreduce 'x' at train.py:57, rank 3 at eval.py:9\n"
                       "likely causes:"))
      << report;
}

TEST(StallInspector, EachListedNameOfALineGetsOneLineOfCallSites) {
  MessageTable table(2);
  for (int i = 0; i < 7; ++i) {
    const std::string name = "g" + std::to_string(i);
    SubmitFrom(&table, name, {{0, i == 1 ? "" : "loop.py:" + std::to_string(10 + i)}}, i);
  }
  StallInspector inspector(Settings(60));
  const std::string report = inspector.Inspect(At(70), &table).report;
  EXPECT_TRUE(Contains(report,
                       " and 2 more (waiting up to 70 s)\n"
                       "    rank 0 called allreduce 'g0' at loop.py:10\n"
                       "    rank 0 called allreduce 'g2' at loop.py:12\n"
                       "    rank 0 called allreduce 'g3' at loop.py:13\n"
                       "    rank 0 called allreduce 'g4' at loop.py:14\n"
                       "likely causes:"))
      << report;
  EXPECT_FALSE(Contains(report, "loop.py:15")) << "only the listed names' sites";
}

TEST(StallInspector, ListsTheFirstCallSitesOfANameAndCountsTheRest) {
  MessageTable table(6);
  std::vector<std::pair<int, std::string>> sites;
  for (int rank = 0; rank < 5; ++rank)
    sites.emplace_back(rank, "r" + std::to_string(rank) + ".py:1");
  SubmitFrom(&table, "x", sites, 0, OpType::kBroadcast);
  StallInspector inspector(Settings(1));
  const std::string report = inspector.Inspect(At(1), &table).report;
  EXPECT_TRUE(Contains(report,
                       "\n    rank 0 called broadcast 'x' at r0.py:1, rank 1 at r1.py:1, rank 2 "
                       "at r2.py:1 and 2 more call sites\n"))
      << report;
}

TEST(StallInspector, TheFailureSaysWhereTheFailingRanksCalledTheName) {
  MessageTable table(2);
  SubmitFrom(&table, "x", {{0, "stall.py:7"}}, 0);
  StallInspector inspector(Settings(1, 2));
  StallInspector::Findings findings = inspector.Inspect(At(2), &table);
  ASSERT_EQ(Names(findings.failed), std::vector<std::string>{"x"});
  EXPECT_TRUE(Contains(findings.failed[0].error_message,
                       "\n  rank 1 has not submitted allreduce 'x' (waiting 2.0 s)\n"
                       "    rank 0 called allreduce 'x' at stall.py:7\n"))
      << findings.failed[0].error_message;
}

}  // namespace
}  // namespace horde

// What horderun reads in a generation's mpirun stderr: who failed, who hung, the commit.
#include "launcher/generation_output.h"

#include <gtest/gtest.h>

#include <sstream>

#include "launcher/rank_exit.h"

namespace horde::launcher {
namespace {

GenerationOutput Scanned(const std::string& text) {
  GenerationOutput output;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) output.Scan(line);
  return output;
}

TEST(GenerationOutput, FindsTheFailedRankInMpirunsOutput) {
  EXPECT_EQ(FailedRankIn("mpirun noticed that process rank 2 with PID 0 on node vm exited on "
                         "signal 9 (Killed)."),
            2);
  EXPECT_EQ(FailedRankIn("  Process name: [[4711,1],3]"), 3);
  EXPECT_EQ(FailedRankIn("rank 1 failed"), std::nullopt);
}

TEST(GenerationOutput, FindsTheFailedRankInOpenMpi5sOutput) {  // PRRTE, as 5.0.7 prints it
  EXPECT_EQ(FailedRankIn("prterun noticed that process rank 2 with PID 21 on node vm exited on"),
            2);
  EXPECT_EQ(FailedRankIn("   Process name: [prterun-vm-7@1,1]"), 1);
  EXPECT_EQ(FailedRankIn("process rank 2 with PID 21 on node vm exited on its own"), std::nullopt);
  EXPECT_EQ(FailedRankIn("   Process name: [prterun-vm-7@1]"), std::nullopt);
}

TEST(GenerationOutput, ReadsHowTheRankMpirunNamesEnded) {
  EXPECT_EQ(Scanned("mpirun noticed that process rank 2 with PID 7 on node vm exited on signal 9 "
                    "(Killed).\n")
                .named_by_mpirun(),
            (RankEnd{2, true, 9}));
  EXPECT_EQ(Scanned("prterun noticed that process rank 1 with PID 21 on node vm exited on\n"
                    "signal 15 (Terminated).\n")
                .named_by_mpirun(),
            (RankEnd{1, true, 15}));
  // Open MPI 4.1's box for a non-zero exit: the rank, then its code.
  GenerationOutput reset = Scanned(
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "the job to be terminated. The first process to do so was:\n\n"
      "  Process name: [[4711,1],0]\n  Exit code:    75\n"
      "--------------------------------------------------------------------------\n");
  EXPECT_EQ(reset.named_by_mpirun(), (RankEnd{0, false, 75}));
}

// In place the job goes on after a rank's failure: each report is taken as it comes.
TEST(GenerationOutput, HandsOverEveryWrappersReportOnce) {
  GenerationOutput output;
  output.Scan("horde rank 2 on vm: killed by signal 9");
  output.Scan("epoch 3: 2 ranks");
  EXPECT_EQ(output.TakeWrapperReports(), std::vector<RankEnd>{(RankEnd{2, true, 9})});
  EXPECT_TRUE(output.TakeWrapperReports().empty());
  output.Scan("[1,0]<stderr>:horde rank 0 on vm: exit code 1");
  output.Scan("horde rank 1 on vm: exit code 3");
  EXPECT_EQ(output.TakeWrapperReports(), (std::vector<RankEnd>{{0, false, 1}, {1, false, 3}}));
  EXPECT_EQ(output.named_by_wrapper(), (RankEnd{2, true, 9}));  // the first, for the end
}

TEST(GenerationOutput, ReadsTheExitWrappersLine) {
  EXPECT_EQ(RankEndInExitLine("horde rank 2 on hostB: killed by signal 9"), (RankEnd{2, true, 9}));
  EXPECT_EQ(RankEndInExitLine("[1,3]<stderr>:horde rank 3 on vm: exit code 1"),
            (RankEnd{3, false, 1}));
  EXPECT_EQ(RankEndInExitLine("horde rank ? on vm: exit code 1"), std::nullopt);
  EXPECT_EQ(RankEndInExitLine("horde rank 2 on vm: exit code 1 and more"), std::nullopt);
  // The first line is the record.
  EXPECT_EQ(Scanned("horde rank 1 on vm: exit code 3\nhorde rank 0 on vm: exit code 4\n")
                .named_by_wrapper(),
            (RankEnd{1, false, 3}));
}

TEST(GenerationOutput, ReadsTheRanksTheLastStallReportNames) {
  EXPECT_EQ(StalledRanksIn("  rank 1 has not submitted allreduce 'x' (waiting 3.0 s)"),
            std::vector<int>{1});
  EXPECT_EQ(StalledRanksIn("  ranks 1,3-5 have not submitted allreduce 'a', broadcast 'b' "
                           "(waiting up to 75 s)"),
            (std::vector<int>{1, 3, 4, 5}));
  EXPECT_EQ(StalledRanksIn("  rank 2 on hostB has not submitted allgather 'y' (waiting 4 s)"),
            std::vector<int>{2});
  EXPECT_EQ(StalledRanksIn("  and 3 more operations that other ranks have not submitted"),
            std::vector<int>{});
  GenerationOutput output = Scanned(
      "[horde] stall: these operations have waited 2 s or more for ranks that have not "
      "submitted them:\n  rank 1 has not submitted allreduce 'x' (waiting 2.0 s)\n"
      "  rank 1 has not submitted allreduce 'x' (waiting 3.0 s)\n"
      "stall: these operations waited 4 s or more for ranks that have not submitted them, and "
      "fail (HORDE_STALL_SHUTDOWN_TIME_SECONDS=4) on every rank: now on the ranks that did, on "
      "the others as they submit them:\n"
      "  ranks 2,3 have not submitted allreduce 'x' (waiting 4.0 s)\n");
  EXPECT_EQ(output.stalled_ranks(), (std::vector<int>{2, 3}));
}

TEST(GenerationOutput, ReadsTheNewestCommitRankZeroAnnounces) {
  EXPECT_EQ(CommitIn("horde elastic: generation 0 holds commit 7f3a-12"), "7f3a-12");
  EXPECT_EQ(CommitIn("[1,0]<stderr>:horde elastic: generation 3 holds commit c9 (restored)"), "c9");
  EXPECT_EQ(CommitIn("horde elastic: generation x holds commit c9"), std::nullopt);
  EXPECT_EQ(Scanned("horde elastic: generation 0 holds commit a\n"
                    "horde elastic: generation 1 holds commit b\n")
                .commit(),
            "b");
  EXPECT_EQ(Scanned("nothing\n").commit(), std::nullopt);
}

TEST(GenerationOutput, QuotesMpirunsErrorForAFailureThatNamesNoRank) {
  EXPECT_EQ(Scanned("mpirun: Error: unknown option \"--no-such-mpirun-flag\"\n"
                    "Type 'mpirun --help' for usage.\n")
                .Complaint(),
            "mpirun: Error: unknown option \"--no-such-mpirun-flag\"");
  EXPECT_EQ(Scanned("ORTE was unable to reliably start one or more daemons.\n-----\n").Complaint(),
            "ORTE was unable to reliably start one or more daemons.");
}

}  // namespace
}  // namespace horde::launcher

// What a generation's end means when some of its failures were handled in place.
#include "launcher/elastic_verdict.h"

#include <gtest/gtest.h>

namespace horde::launcher {
namespace {

GenerationEnd Ended(int exit_code, std::optional<RankEnd> named_by_mpirun = std::nullopt) {
  GenerationEnd end;
  end.exit_code = exit_code;
  end.named_by_mpirun = named_by_mpirun;
  return end;
}

const RankEnd kKilled{2, true, 9};
const InPlaceRecord kRank2Handled{{kKilled}, false};

TEST(ElasticVerdict, RestartModeBlamesTheRankMpirunNames) {
  GenerationVerdict verdict = Judge(Ended(137, kKilled), false);
  EXPECT_EQ(verdict.kind, GenerationVerdict::kRankFailed);
  EXPECT_EQ(verdict.failed, kKilled);
}

// prterun with ULFM may pass on the dead rank's status though the others exited 0.
TEST(ElasticVerdict, InPlaceTheHandledRanksStatusIsAFinishedJob) {
  EXPECT_EQ(Judge(Ended(0), false, kRank2Handled).kind, GenerationVerdict::kFinished);
  EXPECT_EQ(Judge(Ended(137, kKilled), false, kRank2Handled).kind, GenerationVerdict::kFinished);
  GenerationEnd with_line = Ended(137);
  with_line.named_by_wrapper = kKilled;
  EXPECT_EQ(Judge(with_line, false, kRank2Handled).kind, GenerationVerdict::kFinished);
}

TEST(ElasticVerdict, InPlaceAnythingElseAfterHandledFailuresReForms) {
  const auto after = GenerationVerdict::kAfterInPlaceFailures;
  EXPECT_EQ(Judge(Ended(75), false, kRank2Handled).kind, after);  // the survivors left
  EXPECT_EQ(Judge(Ended(137, kKilled), false, {{kKilled}, true}).kind, after);  // too few
  EXPECT_EQ(Judge(Ended(1, kKilled), false, kRank2Handled).kind, after);        // not its status
  EXPECT_EQ(Judge(Ended(137, kKilled), true, kRank2Handled).kind, after);  // an update was sent
  EXPECT_EQ(Judge(Ended(75), true, kRank2Handled).kind, GenerationVerdict::kRequestedReset);
  EXPECT_EQ(Judge(Ended(76), false, kRank2Handled).kind, GenerationVerdict::kCommitLost);
}

TEST(ElasticVerdict, InPlaceARankNotHandledIsStillBlamed) {
  GenerationEnd end = Ended(137, kKilled);
  end.named_by_wrapper = RankEnd{1, false, 3};
  GenerationVerdict verdict = Judge(end, false, kRank2Handled);
  EXPECT_EQ(verdict.kind, GenerationVerdict::kRankFailed);
  EXPECT_EQ(verdict.failed, (RankEnd{1, false, 3}));
}

// The dead rank shows in a stall report before the survivors shrink: not hung.
TEST(ElasticVerdict, InPlaceTheStallReportBlamesOnlyRanksNotHandled) {
  GenerationEnd end = Ended(75);
  end.stalled_ranks = {2};
  EXPECT_EQ(Judge(end, false, kRank2Handled).kind, GenerationVerdict::kAfterInPlaceFailures);
  end.stalled_ranks = {1, 2};
  GenerationVerdict verdict = Judge(end, false, kRank2Handled);
  EXPECT_EQ(verdict.kind, GenerationVerdict::kRanksHung);
  EXPECT_EQ(verdict.hung, std::vector<int>{1});
}

}  // namespace
}  // namespace horde::launcher

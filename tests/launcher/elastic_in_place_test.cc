// The elastic policy in place (Open MPI 5 with ULFM): a rank that fails while its
// generation runs is a reset that does not stop the generation.
#include <gtest/gtest.h>
#include <signal.h>

#include "elastic_policy_fixture.h"
#include "launcher/elastic_policy.h"

namespace horde::launcher {
namespace {

class InPlaceTest : public ElasticPolicyTest {
 protected:
  InPlaceTest() { settings_.in_place = true; }
  ElasticAction Fail(const RankEnd& failed) { return Keep(policy_->OnRankFailed(failed, now_)); }
};

TEST_F(InPlaceTest, AFailedRankIsCountedAndItsSlotWithheldWhileTheOthersGoOn) {
  Policy(2, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  ElasticAction action = Fail(RankEnd{2, true, 9});
  EXPECT_EQ(Last(),
            "reset 1: rank 2 on localhost failed (killed by signal 9); one slot of localhost "
            "(this machine) is withheld (1 in all); the 2 other rank(s) recover in place");
  EXPECT_FALSE(action.stop_generation);
  EXPECT_FALSE(action.exit_code);
  EXPECT_FALSE(action.start);
  EXPECT_FALSE(action.send_host_update);
  EXPECT_EQ(policy_->state(), ElasticPolicy::State::kRunning);
  // The same hosts again: the withheld slot is the failed rank's, no change to re-form for.
  EXPECT_FALSE(Discover(Found({{"localhost", 3}})).send_host_update);
  lines_.clear();
  EXPECT_TRUE(Fail(RankEnd{2, true, 9}).lines.empty());  // once per rank
  EXPECT_TRUE(lines_.empty());
  // More slots than at the failure: the job grows back by re-forming.
  EXPECT_TRUE(Discover(Found({{"localhost", 4}})).send_host_update);
}

// mpirun's own message and the wrapper's line at the end name the rank handled already.
TEST_F(InPlaceTest, TheEndBlamesNoRankHandledInPlace) {
  Policy(2, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  Fail(RankEnd{2, true, 9});
  lines_.clear();
  GenerationEnd end = Ended(137);
  end.named_by_mpirun = RankEnd{2, true, 9};
  end.named_by_wrapper = RankEnd{2, true, 9};
  EXPECT_EQ(End(end).exit_code, 0);
  EXPECT_EQ(policy_->state(), ElasticPolicy::State::kFinished);
  EXPECT_TRUE(lines_.empty());

  Policy(2, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  Fail(RankEnd{1, false, 3});
  EXPECT_EQ(End(Ended(0)).exit_code, 0);
}

// The survivors fewer than --min-np leave with the reset code: the next generation
// starts from the last commit, and the failures are not counted again.
TEST_F(InPlaceTest, TooFewSurvivorsReFormWithoutCountingTheFailuresAgain) {
  settings_.reset_limit = 2;
  Policy(2, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  Fail(RankEnd{2, true, 9});
  Fail(RankEnd{0, false, 1});
  EXPECT_EQ(Last(),
            "reset 2: rank 0 on localhost failed (exit code 1); one slot of localhost (this "
            "machine) is withheld (2 in all); the 1 other rank(s) are fewer than --min-np 2: "
            "they leave, and a new generation forms");
  GenerationEnd end = Ended(75);
  end.named_by_wrapper = RankEnd{2, true, 9};
  end.commit = "g0.c3";
  ElasticAction action = End(end);
  EXPECT_FALSE(action.exit_code);
  EXPECT_FALSE(action.start);  // one usable slot
  EXPECT_EQ(lines_[lines_.size() - 2],
            "generation 0 ended with exit code 75: the failure(s) handled in place (rank 2 on "
            "localhost, rank 0 on localhost) left 1 rank(s), fewer than --min-np 2; restarting "
            "from the last commit");
  EXPECT_EQ(Last(), "waiting for at least 2 slots (have 1)");
  action = Discover(Found({{"localhost", 4}}));
  ASSERT_TRUE(action.start);
  EXPECT_EQ(action.start->generation, 1);
  EXPECT_EQ(action.start->hosts, (std::vector<Host>{{"localhost", 3}}));
  EXPECT_EQ(action.start->expect_commit, "g0.c3");
  // Two resets so far, within --reset-limit 2; the next failure is one too many.
  EXPECT_EQ(Fail(RankEnd{1, true, 9}).exit_code, 1);
}

TEST_F(InPlaceTest, AFailurePastTheResetLimitStopsTheGenerationAndGivesUp) {
  settings_.reset_limit = 1;
  Policy(1, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  EXPECT_FALSE(Fail(RankEnd{1, false, 1}).exit_code);
  ElasticAction action = Fail(RankEnd{2, true, 9});
  EXPECT_EQ(action.exit_code, 1);
  EXPECT_EQ(action.stop_generation, SIGTERM);
  EXPECT_EQ(policy_->state(), ElasticPolicy::State::kGaveUp);
  EXPECT_EQ(Last(),
            "giving up: rank 2 on localhost failed (killed by signal 9); one slot of localhost "
            "(this machine) is withheld (2 in all), and the job was already reset 1 time(s) "
            "(--reset-limit 1)");
}

// A remote host is left out for later generations, once, while its other ranks go on.
TEST_F(InPlaceTest, AFailedRanksRemoteHostIsLeftOutForLaterGenerations) {
  Policy(1, 4);
  Discover(Found({{"hostA", 2}, {"hostB", 2}}));
  ASSERT_TRUE(Keep(policy_->OnSshChecked({}, now_)).start);
  Fail(RankEnd{3, false, 1});
  EXPECT_EQ(Last(),
            "reset 1: rank 3 on hostB failed (exit code 1); host hostB is left out from now on; "
            "the 3 other rank(s) recover in place");
  EXPECT_FALSE(Discover(Found({{"hostA", 2}, {"hostB", 2}})).send_host_update);
  Fail(RankEnd{2, true, 9});
  EXPECT_EQ(Last(),
            "reset 2: rank 2 on hostB failed (killed by signal 9); the 2 other rank(s) "
            "recover in place");
  // The survivors could not go on: the next generation runs without hostB.
  ElasticAction action = End(Ended(75));
  EXPECT_EQ(lines_[lines_.size() - 1],
            "generation 0 ended with exit code 75 after the failure(s) handled in place (rank 3 "
            "on hostB, rank 2 on hostB); restarting from the start (no commit was announced "
            "yet)");
  ASSERT_TRUE(action.start);
  EXPECT_EQ(action.start->hosts, (std::vector<Host>{{"hostA", 2}}));
}

// A failure no rank's line reported while it ran (a killed exit wrapper) is judged at the
// end as in a restart.
TEST_F(InPlaceTest, AFailureNotHandledInPlaceIsBlamedAtTheEnd) {
  Policy(1, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  Fail(RankEnd{2, true, 9});
  GenerationEnd end = Ended(137);
  end.named_by_mpirun = RankEnd{1, true, 9};
  ASSERT_TRUE(End(end).start);
  EXPECT_EQ(Last(),
            "reset 2: rank 1 on localhost failed (exit code 137); one slot of localhost (this "
            "machine) is withheld (2 in all); restarting from the start (no commit was "
            "announced yet)");
}

TEST_F(InPlaceTest, RestartModeWaitsForTheEnd) {
  settings_.in_place = false;
  Policy(1, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  ElasticAction action = Fail(RankEnd{2, true, 9});
  EXPECT_TRUE(action.lines.empty());
  EXPECT_FALSE(action.exit_code);
  GenerationEnd end = Ended(137);
  end.named_by_wrapper = RankEnd{2, true, 9};
  ASSERT_TRUE(End(end).start);
  EXPECT_EQ(Last(),
            "reset 1: rank 2 on localhost failed (exit code 137); one slot of localhost (this "
            "machine) is withheld (1 in all); restarting from the start (no commit was "
            "announced yet)");
}

}  // namespace
}  // namespace horde::launcher

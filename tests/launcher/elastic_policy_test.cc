// The elastic supervisor's decisions, event by event, on a fake clock.
#include "launcher/elastic_policy.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "elastic_policy_fixture.h"

namespace horde::launcher {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_F(ElasticPolicyTest, StartsOnceTheHostsHaveMinNpSlots) {
  Policy(2, 4);
  EXPECT_FALSE(Discover(Found({{"localhost", 1}})).start);
  EXPECT_EQ(Last(), "waiting for at least 2 slots (have 1)");
  ElasticAction action = Discover(Found({{"localhost", 3}}));
  ASSERT_TRUE(action.start);
  EXPECT_EQ(action.start->generation, 0);
  EXPECT_EQ(action.start->hosts, (std::vector<Host>{{"localhost", 3}}));
  EXPECT_EQ(action.start->expect_commit, std::nullopt);
  EXPECT_EQ(policy_->state(), ElasticPolicy::State::kRunning);
}

TEST_F(ElasticPolicyTest, GivesUpAfterTheElasticTimeoutWithoutEnoughSlots) {
  settings_.elastic_timeout = seconds(3);
  Policy(2, 2);
  for (int i = 0; i < 3; ++i) Discover(Found({{"localhost", 1}}));
  ElasticAction action = Tick();
  EXPECT_EQ(action.exit_code, 1);
  EXPECT_EQ(Last(),
            "only 1 usable slot(s) (localhost:1) for 3 s (--elastic-timeout), expected "
            "at least --min-np 2");
}

// mpirun that cannot start (a bad flag, a daemon that cannot start) names no rank: the
// next generation waits 1, 2, 4, 8 s, and the fifth such failure in a row gives up.
TEST_F(ElasticPolicyTest, FailuresThatNameNoRankBackOffAndGiveUp) {
  Policy(1, 1);
  ASSERT_TRUE(Discover(Found({{"localhost", 1}})).start);
  GenerationEnd bad = Ended(1);
  bad.complaint = "mpirun: Error: unknown option \"--no-such-mpirun-flag\"";
  for (int failure = 1; failure < ElasticPolicy::kMaxUnexplained; ++failure) {
    ElasticAction action = End(bad);
    EXPECT_FALSE(action.start);
    EXPECT_EQ(policy_->state(), ElasticPolicy::State::kResetting);
    const int back_off = 1 << (failure - 1);
    EXPECT_EQ(Last(), "reset " + std::to_string(failure) + ": generation " +
                          std::to_string(failure - 1) +
                          " ended with exit code 1 and no rank named as failed (mpirun: "
                          "'mpirun: Error: unknown option \"--no-such-mpirun-flag\"'); restarting "
                          "from the start (no commit was announced yet) in " +
                          std::to_string(back_off) + " s (" + std::to_string(failure) +
                          " in a row without a named rank; horderun gives up at 5)");
    now_ += seconds(back_off) - milliseconds(1);
    EXPECT_FALSE(Tick().start);
    now_ += milliseconds(1);
    ASSERT_TRUE(Tick().start) << failure;
  }
  EXPECT_EQ(End(bad).exit_code, 1);
  EXPECT_EQ(policy_->state(), ElasticPolicy::State::kGaveUp);
  EXPECT_EQ(Last(),
            "giving up: generation 4 ended with exit code 1 and no rank named as failed "
            "(mpirun: 'mpirun: Error: unknown option \"--no-such-mpirun-flag\"'); 5 "
            "generations in a row failed without naming a rank: check the mpirun command "
            "(--verbose prints it) and that every host can start ranks");
}

TEST_F(ElasticPolicyTest, AGenerationThatRanLongStartsTheCountAgain) {
  Policy(1, 1);
  ASSERT_TRUE(Discover(Found({{"localhost", 1}})).start);
  for (int i = 0; i < 3 * ElasticPolicy::kMaxUnexplained; ++i) {
    now_ += ElasticPolicy::kSettledRun;
    EXPECT_FALSE(End(Ended(1)).exit_code);
    now_ += seconds(1);
    ASSERT_TRUE(Tick().start);
  }
}

TEST_F(ElasticPolicyTest, HostsInAnotherOrderAreNoChange) {
  Policy(2, 4);
  ElasticAction check = Discover(Found({{"hostA", 2}, {"hostB", 2}}));
  EXPECT_EQ(check.check_ssh, (std::vector<std::string>{"hostA", "hostB"}));
  ElasticAction start = Keep(policy_->OnSshChecked({}, now_));
  ASSERT_TRUE(start.start);
  EXPECT_FALSE(Discover(Found({{"hostB", 2}, {"hostA", 2}})).send_host_update);
  // --max-np cuts the running generation's hosts first, whatever the order.
  EXPECT_FALSE(Discover(Found({{"hostC", 2}, {"hostB", 2}, {"hostA", 2}})).send_host_update);
  EXPECT_TRUE(Discover(Found({{"hostB", 2}, {"hostA", 1}})).send_host_update);
  EXPECT_FALSE(Discover(Found({{"hostB", 2}})).send_host_update);  // once per generation
}

TEST_F(ElasticPolicyTest, TheFirstDiscoveryMustWorkLaterFailuresAreRetried) {
  Policy(1, 1);
  EXPECT_EQ(Discover(Failed("host discovery script ./d.sh failed with exit code 4")).exit_code, 1);
  EXPECT_EQ(Last(), "host discovery script ./d.sh failed with exit code 4");

  settings_.elastic_timeout = seconds(5);
  lines_.clear();
  Policy(1, 1);
  ASSERT_TRUE(Discover(Found({{"localhost", 1}})).start);
  const std::string error = "host discovery script ./d.sh failed with exit code 4: 'down'";
  for (int run = 0; run < 3; ++run) EXPECT_FALSE(Discover(Failed(error)).exit_code);
  EXPECT_FALSE(Discover(Found({{"localhost", 1}})).send_host_update);
  EXPECT_EQ(lines_, (std::vector<std::string>{
                        error + "; keeping the last hosts and retrying for up to 5 s "
                                "(--elastic-timeout)",
                        "host discovery script ./d.sh works again after 3 failed run(s)"}));
  for (int run = 0; run < 5; ++run) EXPECT_FALSE(Discover(Failed(error)).exit_code);
  ElasticAction last = Discover(Failed(error));
  EXPECT_EQ(last.exit_code, 1);
  EXPECT_EQ(last.stop_generation, SIGTERM);  // the running one, before horderun exits
  EXPECT_EQ(Last(),
            "host discovery has failed for 5 s (--elastic-timeout); the last run: " + error);
}

TEST_F(ElasticPolicyTest, LogsTheScriptsStderrWhenItChangesBounded) {
  Policy(1, 1);
  std::vector<std::string> seven = {"1", "2", "3", "4", "5", "6", "7"};
  Discover(Found({{"localhost", 1}}, seven));
  ASSERT_EQ(lines_.size(), 6u);
  EXPECT_EQ(lines_[0], "host discovery script stderr: 1");
  EXPECT_EQ(lines_[5], "host discovery script stderr: (2 more lines)");
  lines_.clear();
  Discover(Found({{"localhost", 1}}, seven));
  Discover(Found({{"localhost", 1}}, {std::string(500, 'x')}));
  EXPECT_EQ(lines_,
            std::vector<std::string>{"host discovery script stderr: " + std::string(200, 'x')});
}

// The others leave with the reset code once one rank failed: the wrapper's line blames.
TEST_F(ElasticPolicyTest, AFailedRanksHostIsLeftOutWhateverCodeMpirunPassedOn) {
  Policy(1, 4);
  Discover(Found({{"hostA", 2}, {"hostB", 2}}));
  ASSERT_TRUE(Keep(policy_->OnSshChecked({}, now_)).start);
  GenerationEnd end = Ended(75);
  end.named_by_mpirun = RankEnd{0, false, 75};
  end.named_by_wrapper = RankEnd{3, false, 3};
  lines_.clear();
  ElasticAction action = End(end);
  EXPECT_EQ(lines_[0],
            "reset 1: rank 3 on hostB failed (exit code 3); host hostB is left out from now "
            "on; restarting from the start (no commit was announced yet)");
  ASSERT_TRUE(action.start);
  EXPECT_EQ(action.start->hosts, (std::vector<Host>{{"hostA", 2}}));
}

// A rank's exit wrapper killed: mpirun names it; the ranks it then stopped are bystanders.
TEST_F(ElasticPolicyTest, TheRankMpirunNamesComesBeforeABystandersLine) {
  Policy(1, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  GenerationEnd end = Ended(137);
  end.named_by_mpirun = RankEnd{2, true, 9};
  end.named_by_wrapper = RankEnd{0, true, 15};
  EXPECT_EQ(End(end).start->hosts, (std::vector<Host>{{"localhost", 2}}));
  EXPECT_EQ(lines_[0],
            "reset 1: rank 2 on localhost failed (exit code 137); one slot of "
            "localhost (this machine) is withheld (1 in all); restarting from the "
            "start (no commit was announced yet)");
}

TEST_F(ElasticPolicyTest, ARankTheStallReportNamesIsBlamedForAReset) {
  Policy(1, 4);
  Discover(Found({{"hostA", 2}, {"hostB", 2}}));
  ASSERT_TRUE(Keep(policy_->OnSshChecked({}, now_)).start);
  GenerationEnd end = Ended(75);
  end.named_by_mpirun = RankEnd{0, false, 75};
  end.stalled_ranks = {2, 3};
  lines_.clear();
  EXPECT_EQ(End(end).start->hosts, (std::vector<Host>{{"hostA", 2}}));
  EXPECT_EQ(lines_[0],
            "reset 1: rank 2 on hostB, rank 3 on hostB hung (named by the stall "
            "report); host hostB is left out from now on; restarting from the start "
            "(no commit was announced yet)");
}

TEST_F(ElasticPolicyTest, ARequestedResetFollowsAHostUpdate) {
  Policy(1, 4);
  ASSERT_TRUE(Discover(Found({{"localhost", 2}})).start);
  EXPECT_TRUE(Discover(Found({{"localhost", 3}})).send_host_update);
  GenerationEnd end = Ended(75);
  end.commit = "c-17";
  ElasticAction action = End(end);
  EXPECT_EQ(lines_[0],
            "reset 1: the ranks committed and asked to re-form; restarting from the "
            "last commit");
  ASSERT_TRUE(action.start);
  EXPECT_EQ(action.start->generation, 1);
  EXPECT_EQ(action.start->hosts, (std::vector<Host>{{"localhost", 3}}));
  EXPECT_EQ(action.start->expect_commit, "c-17");
}

TEST_F(ElasticPolicyTest, LostCommitsStopTheJob) {
  Policy(1, 2);
  ASSERT_TRUE(Discover(Found({{"localhost", 2}})).start);
  GenerationEnd first = Ended(137);
  first.named_by_wrapper = RankEnd{1, true, 9};
  first.commit = "c-17";
  ASSERT_TRUE(End(first).start);
  EXPECT_EQ(End(Ended(76)).exit_code, 1);
  EXPECT_EQ(Last(),
            "no host that holds a commit of this job is left (the newest was c-17); job "
            "stopped");
}

TEST_F(ElasticPolicyTest, MoreResetsThanTheLimitGiveUp) {
  settings_.reset_limit = 1;
  Policy(1, 3);
  ASSERT_TRUE(Discover(Found({{"localhost", 3}})).start);
  GenerationEnd end = Ended(3);
  end.named_by_wrapper = RankEnd{0, false, 3};
  ASSERT_TRUE(End(end).start);
  EXPECT_EQ(End(end).exit_code, 1);
  EXPECT_EQ(Last(),
            "giving up: rank 0 on localhost failed (exit code 3); one slot of localhost "
            "(this machine) is withheld (2 in all), and the job was already reset 1 "
            "time(s) (--reset-limit 1)");
}

TEST_F(ElasticPolicyTest, AStopSignalStopsTheGenerationThenExits) {
  Policy(1, 1);
  ASSERT_TRUE(Discover(Found({{"localhost", 1}})).start);
  EXPECT_EQ(policy_->OnStopSignal(SIGTERM, now_).stop_generation, SIGTERM);
  EXPECT_FALSE(policy_->OnStopSignal(SIGINT, now_).stop_generation);  // already stopping
  EXPECT_EQ(End(Ended(143)).exit_code, 128 + SIGTERM);
  Policy(2, 2);
  EXPECT_EQ(policy_->OnStopSignal(SIGINT, now_).exit_code, 128 + SIGINT);
}

TEST_F(ElasticPolicyTest, ASshFailureLeavesTheHostOut) {
  Policy(1, 4);
  Discover(Found({{"hostA", 2}, {"hostB", 2}}));
  ElasticAction action = Keep(
      policy_->OnSshChecked({{"hostB", "cannot reach hostB over ssh"}}, now_));
  ASSERT_TRUE(action.start);
  EXPECT_EQ(action.start->hosts, (std::vector<Host>{{"hostA", 2}}));
  EXPECT_EQ(Last(), "cannot reach hostB over ssh; host hostB is left out from now on");
}

}  // namespace
}  // namespace horde::launcher

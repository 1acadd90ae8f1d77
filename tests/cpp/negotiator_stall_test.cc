// Stall limits seen through whole negotiation rounds on the test's clock: a request's
// age counts from its submission on its rank, whether it waits as a cached hit (the
// fast path) or at the coordinator, so the report comes at the check time and the
// failure at the shutdown time, whatever their ratio.
#include <gtest/gtest.h>

#include <optional>

#include "core/negotiator.h"
#include "tests/cpp/simulated_ranks.h"

namespace horde {
namespace {

using testing::AllBut;
using testing::Allreduce;
using testing::Everyone;
using testing::kDefaultThreshold;
using testing::Nobody;
using testing::SimulatedRanks;

constexpr std::chrono::milliseconds kStep(50);

struct Outcome {
  std::optional<double> reported;  // seconds after the submission
  std::optional<double> failed;
};

// Every rank but 1 submits "w" (warmed into the cache first, if `cached`) at second 0;
// rank 1 never does. Rounds run every 50 ms; returns when the stall was reported and
// when "w" failed, up to second 30.
Outcome Stall(int size, double check_seconds, double shutdown_seconds, bool cached) {
  StallSettings stall;
  stall.check_seconds = check_seconds;
  stall.shutdown_seconds = shutdown_seconds;
  SimulatedRanks ranks(size, kDefaultThreshold, std::chrono::seconds(10), stall);
  if (cached) {
    ranks.Round(Everyone(size, {Allreduce("w")}));
    EXPECT_EQ(ranks.negotiator(0).cache().size(), 1u);
  }
  ranks.Advance(std::chrono::seconds(1000));  // a clock far from its epoch, as a real one is
  Outcome outcome;
  for (double t = 0; t <= 30 && !outcome.failed; t += 0.05) {
    ::testing::internal::CaptureStderr();
    ResponseList decided = ranks.Round(t == 0 ? AllBut(size, 1, Allreduce("w")) : Nobody(size));
    const std::string log = ::testing::internal::GetCapturedStderr();
    if (!outcome.reported && log.find("stall: these operations have waited") != std::string::npos) {
      outcome.reported = t;
    }
    for (const Response& response : decided.responses) {
      EXPECT_EQ(response.kind, Response::Kind::kError) << "w cannot run without rank 1";
      outcome.failed = t;
    }
    ranks.Advance(kStep);
  }
  return outcome;
}

class NegotiatorStallTest : public ::testing::TestWithParam<std::tuple<int, bool>> {
 protected:
  int size() const { return std::get<0>(GetParam()); }
  bool cached() const { return std::get<1>(GetParam()); }
};

// Within one round (50 ms here) of the limit.
void ExpectAt(const std::optional<double>& when, double limit, const char* what) {
  ASSERT_TRUE(when.has_value()) << what << " never came";
  EXPECT_GE(*when, limit - 1e-9) << what;
  EXPECT_LT(*when, limit + 0.1) << what;
}

TEST_P(NegotiatorStallTest, AShutdownTimeBelowTheCheckTimeFailsOnTime) {
  const Outcome outcome = Stall(size(), 20, 3, cached());
  ExpectAt(outcome.failed, 3, "the failure");
  EXPECT_FALSE(outcome.reported) << "it failed before a warning was due";
}

TEST_P(NegotiatorStallTest, TheReportComesAtTheCheckTimeAndTheFailureAtTheShutdownTime) {
  const Outcome outcome = Stall(size(), 2, 5, cached());
  ExpectAt(outcome.reported, 2, "the report");
  ExpectAt(outcome.failed, 5, "the failure");
}

TEST_P(NegotiatorStallTest, WithoutAShutdownTimeTheReportComesAtTheCheckTime) {
  const Outcome outcome = Stall(size(), 4, 0, cached());
  ExpectAt(outcome.reported, 4, "the report");
  EXPECT_FALSE(outcome.failed);
}

TEST_P(NegotiatorStallTest, EqualLimitsFailAtThatTime) {
  const Outcome outcome = Stall(size(), 3, 3, cached());
  ExpectAt(outcome.failed, 3, "the failure");
}

INSTANTIATE_TEST_SUITE_P(RanksAndCache, NegotiatorStallTest,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<int, bool>>& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  (std::get<1>(info.param) ? "cached" : "uncached");
                         });

// A request that reached the negotiator late (its runtime was busy executing) still
// counts from when it was submitted.
TEST(NegotiatorStall, AgeCountsFromTheSubmissionTheRequestCarries) {
  StallSettings stall;
  stall.check_seconds = 60;
  stall.shutdown_seconds = 3;
  SimulatedRanks ranks(2, kDefaultThreshold, std::chrono::seconds(10), stall);
  ranks.Advance(std::chrono::seconds(100));
  Request late = Allreduce("late");
  late.submitted = SteadyTime() + std::chrono::seconds(98);  // 2 s ago on rank 0's clock
  std::vector<RequestList> lists = Nobody(2);
  lists[0].requests = {late};
  EXPECT_TRUE(ranks.Round(lists).responses.empty());
  ResponseList decided;
  int rounds = 0;
  while (decided.responses.empty() && rounds < 40) {
    ranks.Advance(kStep);
    decided = ranks.Round(Nobody(2));
    ++rounds;
  }
  EXPECT_EQ(rounds, 20) << "fails 1 s (20 rounds) later, 3 s after its submission";
  ASSERT_EQ(decided.responses.size(), 1u);
  EXPECT_EQ(decided.responses[0].kind, Response::Kind::kError);
}

}  // namespace
}  // namespace horde

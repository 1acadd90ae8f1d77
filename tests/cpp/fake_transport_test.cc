// The fake transport is what the negotiation tests stand on, so check it first:
// correct routing, rounds kept apart, and bounded waits.
#include "tests/cpp/fake_transport.h"

#include <gtest/gtest.h>

namespace horde {
namespace testing {
namespace {

TEST(FakeTransport, GatherAndBroadcastRouteBlobsOverManyRounds) {
  constexpr int kRanks = 3;
  constexpr int kRounds = 50;
  auto hub = std::make_shared<FakeHub>(kRanks);
  std::vector<std::vector<std::string>> gathered(kRanks);
  std::vector<std::vector<std::string>> received(kRanks);
  std::vector<Status> failures(kRanks);
  RunOnRanks(kRanks, [&](int rank) {
    FakeTransport transport(hub, rank);
    for (int round = 0; round < kRounds; ++round) {
      std::vector<std::string> all;
      Status s = transport.GatherToCoordinator(
          "r" + std::to_string(rank) + "/" + std::to_string(round), &all);
      std::string blob = rank == 0 ? "decision " + std::to_string(round) : "ignored";
      if (s.ok()) s = transport.BroadcastFromCoordinator(&blob);
      if (!s.ok()) {
        failures[rank] = s;
        return;
      }
      // Keep only the last round's results; earlier rounds are checked by the content.
      gathered[rank] = all;
      received[rank].push_back(blob);
    }
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_TRUE(failures[rank].ok()) << failures[rank].message();
    ASSERT_EQ(received[rank].size(), static_cast<size_t>(kRounds));
    for (int round = 0; round < kRounds; ++round) {
      EXPECT_EQ(received[rank][round], "decision " + std::to_string(round));
    }
  }
  const std::string last = "/" + std::to_string(kRounds - 1);
  EXPECT_EQ(gathered[0], (std::vector<std::string>{"r0" + last, "r1" + last, "r2" + last}));
  EXPECT_TRUE(gathered[1].empty());
  EXPECT_TRUE(gathered[2].empty());
}

TEST(FakeTransport, MissingRankTimesOutAndHubRecovers) {
  auto hub = std::make_shared<FakeHub>(2, std::chrono::milliseconds(100));
  FakeTransport rank0(hub, 0);
  std::vector<std::string> all;
  Status s = rank0.GatherToCoordinator("alone", &all);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("fake transport timed out"), std::string::npos) << s.message();

  // The withdrawn blob must not leak into the next, complete round.
  std::vector<std::vector<std::string>> gathered(2);
  std::vector<Status> status(2);
  RunOnRanks(2, [&](int rank) {
    FakeTransport transport(hub, rank);
    status[rank] = transport.GatherToCoordinator("fresh" + std::to_string(rank), &gathered[rank]);
  });
  ASSERT_TRUE(status[0].ok()) << status[0].message();
  ASSERT_TRUE(status[1].ok()) << status[1].message();
  EXPECT_EQ(gathered[0], (std::vector<std::string>{"fresh0", "fresh1"}));
}

TEST(FakeTransport, DifferentCallsInOnePhaseAreReported) {
  auto hub = std::make_shared<FakeHub>(2, std::chrono::milliseconds(100));
  std::vector<Status> status(2);
  RunOnRanks(2, [&](int rank) {
    FakeTransport transport(hub, rank);
    std::vector<std::string> all;
    std::string blob;
    status[rank] = rank == 0 ? transport.GatherToCoordinator("x", &all)
                             : transport.BroadcastFromCoordinator(&blob);
  });
  // Whichever rank arrived second is told about the mix-up; the first times out.
  EXPECT_FALSE(status[0].ok());
  EXPECT_FALSE(status[1].ok());
  const std::string both = status[0].message() + status[1].message();
  EXPECT_NE(both.find("while other ranks are in"), std::string::npos) << both;
}

}  // namespace
}  // namespace testing
}  // namespace horde

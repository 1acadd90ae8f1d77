// An operation that fails fails on every rank: one that stalled past the shutdown time on
// the ranks that submitted it fails on a late rank too, when it submits, with the same
// message, and that rank's next submission of the name pairs with the others' next one.
// Real runtimes (background loops, the real clock) over the fake transport.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "tests/cpp/runtime_harness.h"

namespace horde {
namespace {

using testing::ExpectOk;
using testing::FloatTensor;
using testing::Outcome;

// Adds 1 to every element: after a successful allreduce each tensor holds one more.
class AddOne : public CollectiveOp {
 public:
  bool Enabled(const Response&, const std::vector<TensorEntry>&) const override { return true; }
  Status Execute(std::vector<TensorEntry>& entries, const Response&) override {
    for (auto& entry : entries) {
      for (float& v : static_cast<FloatTensor*>(entry.input.get())->values) v += 1.0f;
    }
    return Status::Ok();
  }
};

Config WithStallShutdown(double seconds) {
  Config config;
  config.stall.check_seconds = 60;
  config.stall.shutdown_seconds = seconds;
  return config;
}

std::unique_ptr<OpRegistry> AddOneOps(int) {
  auto ops = std::make_unique<OpRegistry>();
  for (int op = 0; op < kNumOpTypes; ++op) {
    ops->Register(static_cast<OpType>(op), std::make_unique<AddOne>());
  }
  return ops;
}

Request Allreduce(const std::string& name) {
  Request r;
  r.name = name;
  r.shape = {4};
  return r;
}

Status Submit(Runtime& runtime, const std::string& name, Outcome* outcome,
              std::shared_ptr<FloatTensor> tensor = std::make_shared<FloatTensor>(4, 0.0f)) {
  return testing::Submit(runtime, Allreduce(name), outcome, std::move(tensor));
}

class FailedAlike : public ::testing::TestWithParam<bool> {};

TEST_P(FailedAlike, ALateRankGetsTheSameFailureAndItsNextStepPairsWithTheOthersNext) {
  const bool cached = GetParam();  // "w" ran once before, so it waits as a cache hit
  testing::RankPair ranks(AddOneOps, WithStallShutdown(0.4));
  if (cached) {
    Outcome first[2];
    for (int r = 0; r < 2; ++r) ASSERT_TRUE(Submit(ranks[r], "w", &first[r]).ok());
    for (auto& outcome : first) ExpectOk(&outcome, "the warm-up");
  }
  // Step 1: rank 1 is late. Rank 0's "w" fails at the shutdown time, alike everywhere.
  Outcome step1_rank0;
  const auto submitted = std::chrono::steady_clock::now();
  ASSERT_TRUE(Submit(ranks[0], "w", &step1_rank0).ok());
  std::optional<Status> failed = step1_rank0.Wait();
  ASSERT_TRUE(failed.has_value());
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count();
  EXPECT_FALSE(failed->ok());
  EXPECT_TRUE(failed->agreed()) << failed->message();
  EXPECT_NE(failed->message().find("rank 1 has not submitted allreduce 'w'"), std::string::npos)
      << failed->message();
  EXPECT_GE(waited, 0.4);
  EXPECT_LT(waited, 1.4) << "the shutdown time plus well under a second";

  // Rank 0 goes on to step 2 before rank 1 arrives for step 1.
  auto step2_rank0_tensor = std::make_shared<FloatTensor>(4, 0.0f);
  Outcome step2_rank0;
  ASSERT_TRUE(Submit(ranks[0], "w", &step2_rank0, step2_rank0_tensor).ok());
  // Rank 1's step 1 fails at once, with rank 0's message; rank 0's step 2 waits on.
  Outcome step1_rank1;
  ASSERT_TRUE(Submit(ranks[1], "w", &step1_rank1).ok());
  std::optional<Status> late = step1_rank1.Wait();
  ASSERT_TRUE(late.has_value());
  EXPECT_TRUE(late->agreed());
  EXPECT_EQ(late->message(), failed->message());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(step2_rank0.calls(), 0) << "rank 0's next step must not pair with rank 1's late one";

  // Rank 1's step 2 pairs with rank 0's.
  auto step2_rank1_tensor = std::make_shared<FloatTensor>(4, 0.0f);
  Outcome step2_rank1;
  ASSERT_TRUE(Submit(ranks[1], "w", &step2_rank1, step2_rank1_tensor).ok());
  ExpectOk(&step2_rank0, "rank 0's step 2");
  ExpectOk(&step2_rank1, "rank 1's step 2");
  EXPECT_EQ(step2_rank0_tensor->values[0], 1.0f);
  EXPECT_EQ(step2_rank1_tensor->values[0], 1.0f);
}

INSTANTIATE_TEST_SUITE_P(Cache, FailedAlike, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "cached" : "uncached";
                         });

TEST(FailedAlike, AMismatchIsAgreedAndALocalMistakeIsNot) {
  testing::RankPair ranks(AddOneOps, WithStallShutdown(0));
  Outcome outcome[2];
  Request other = Allreduce("m");
  other.shape = {5};
  ASSERT_TRUE(Submit(ranks[0], "m", &outcome[0]).ok());
  ASSERT_TRUE(testing::Submit(ranks[1], other, &outcome[1], std::make_shared<FloatTensor>(5)).ok());
  for (auto& o : outcome) {
    std::optional<Status> s = o.Wait();
    ASSERT_TRUE(s.has_value());
    EXPECT_FALSE(s->ok());
    EXPECT_TRUE(s->agreed()) << s->message();
  }
  Request bad = Allreduce("bad");
  bad.root = 7;
  bad.op = OpType::kBroadcast;
  Outcome never;
  const Status local = testing::Submit(ranks[0], bad, &never, std::make_shared<FloatTensor>(4));
  EXPECT_FALSE(local.ok());
  EXPECT_FALSE(local.agreed()) << "a mistake on one rank is that rank's alone";
}

}  // namespace
}  // namespace horde

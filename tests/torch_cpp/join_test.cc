// horde::torch::join for uneven data: rank r has r batches. A rank that runs out joins;
// the others' allreduces complete with zeros from the joined ranks (Average still
// divides by size()), and join returns the last rank to join, the same on every rank.
#include <gtest/gtest.h>

#include <string>

#include "tests/torch_cpp/test_util.h"

namespace {

using horde::Status;
namespace ht = horde::torch;

TEST(Join, JoinedRanksContributeZerosAndTheLastToJoinIsReturned) {
  const int size = horde::size(), me = horde::rank();
  // Step i runs on the ranks above i; rank size - 1 has the most steps and joins last.
  for (int step = 0; step < me; ++step) {
    const std::string name = "join.step." + std::to_string(step);
    const double active = size - 1 - step;
    at::Tensor sum = ht::allreduce(at::ones({3}, at::kDouble), {horde::Sum, name + ".sum"});
    EXPECT_TRUE(sum.equal(at::full({3}, active, at::kDouble))) << "step " << step << ": " << sum;
    at::Tensor average =
        ht::allreduce_async(at::ones({3}, at::kDouble), {horde::Average, name + ".avg"}).wait();
    EXPECT_TRUE(average.allclose(at::full({3}, active / size, at::kDouble)))
        << "step " << step << ": " << average;
  }
  EXPECT_EQ(ht::join(), size - 1);
  // Once every rank has joined, every collective runs as usual.
  EXPECT_TRUE(ht::allreduce(at::ones({2}), {horde::Sum, "join.after"})
                  .equal(at::full({2}, size, at::kFloat)));
  EXPECT_TRUE(horde_test::SameOnAllRanks(at::ones({2})));
}

TEST(Join, OtherCollectivesFailWhileARankHasJoined) {
  if (horde::size() == 1) GTEST_SKIP() << "needs a rank that has not joined";
  int last = -1;
  if (horde::rank() == 0) {
    last = ht::join();
  } else {
    Status status = horde_test::ErrorOf([] { ht::allgather(at::ones({1}), "join.forbidden"); });
    EXPECT_FALSE(status.ok());
    EXPECT_NE(
        status.message().find("allgather 'join.forbidden' cannot run while rank 0 has joined"),
        std::string::npos)
        << status.message();
    last = ht::join();
  }
  EXPECT_GE(last, 1);
  EXPECT_LT(last, horde::size());
  EXPECT_EQ(horde::size(), ht::allgather(at::ones({1}), "join.forbidden.after").size(0));
}

TEST(Join, ADeviceIndexBelowMinusOneIsAnInvalidArgument) {
  Status status = horde_test::ErrorOf([] { ht::join(-2); });
  EXPECT_EQ(status.code(), horde::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("join: device -2 is not a device index"), std::string::npos)
      << status.message();
}

}  // namespace

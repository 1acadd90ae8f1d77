#include "core/failed_names.h"

#include <gtest/gtest.h>

namespace horde {
namespace {

Response Failure(const std::string& name, const std::string& message) {
  Response error;
  error.kind = Response::Kind::kError;
  error.names = {name};
  error.error_message = message;
  error.ranks = {0};
  return error;
}

Request From(int rank, const std::string& name) {
  Request request;
  request.rank = rank;
  request.name = name;
  return request;
}

TEST(FailedNames, AnOwingRankFailsOnceWithTheSameMessageOnItsOwn) {
  FailedNames failed;
  failed.Failed(Failure("w", "stalled"), {1, 2});
  EXPECT_EQ(failed.size(), 2u);
  EXPECT_FALSE(failed.Settle(From(0, "w"))) << "rank 0 owes nothing: its request is new";
  EXPECT_FALSE(failed.Settle(From(1, "x")));
  std::optional<Response> owed = failed.Settle(From(1, "w"));
  ASSERT_TRUE(owed);
  EXPECT_EQ(owed->kind, Response::Kind::kError);
  EXPECT_EQ(owed->names, std::vector<std::string>{"w"});
  EXPECT_EQ(owed->error_message, "stalled");
  EXPECT_EQ(owed->ranks, std::vector<int64_t>{1});
  EXPECT_TRUE(Concerns(*owed, 1));
  EXPECT_FALSE(Concerns(*owed, 0));
  EXPECT_FALSE(failed.Settle(From(1, "w"))) << "paid: its next request is new";
  EXPECT_TRUE(failed.Settle(From(2, "w")));
  EXPECT_EQ(failed.size(), 0u);
}

TEST(FailedNames, SeveralFailedInstancesAreSettledInOrder) {
  FailedNames failed;
  failed.Failed(Failure("w", "first"), {1});
  failed.Failed(Failure("w", "second"), {1});
  EXPECT_EQ(failed.Settle(From(1, "w"))->error_message, "first");
  EXPECT_EQ(failed.Settle(From(1, "w"))->error_message, "second");
  EXPECT_FALSE(failed.Settle(From(1, "w")));
}

TEST(FailedNames, AJoinedRankOwesNothing) {
  FailedNames failed;
  failed.Failed(Failure("w", "stalled"), {1, 2});
  failed.Forget(1);
  EXPECT_EQ(failed.size(), 1u);
  EXPECT_FALSE(failed.Settle(From(1, "w")));
  EXPECT_TRUE(failed.Settle(From(2, "w")));
}

TEST(FailedNames, TheOldestDebtsAreForgottenPastTheBound) {
  FailedNames failed;
  ::testing::internal::CaptureStderr();
  for (size_t i = 0; i <= FailedNames::kMaxDebts; ++i) {
    failed.Failed(Failure("n" + std::to_string(i), "stalled"), {1});
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(failed.size(), FailedNames::kMaxDebts);
  EXPECT_FALSE(failed.Settle(From(1, "n0"))) << "the oldest was forgotten";
  EXPECT_TRUE(failed.Settle(From(1, "n1")));
  EXPECT_NE(log.find("forgetting that 1 rank(s) still owe a request for 'n0'"), std::string::npos)
      << log;
}

}  // namespace
}  // namespace horde

#include "core/completion_counter.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace horde {
namespace {

TEST(CompletionCounter, WaitReturnsOnceEveryOperationCompleted) {
  CompletionCounter counter;
  counter.Expect(1000);
  std::thread background([&] {
    for (size_t tag = 0; tag < 1000; ++tag) counter.Complete(tag, Status::Ok());
  });
  std::vector<size_t> failed{99};
  EXPECT_TRUE(counter.Wait(&failed).ok());
  EXPECT_TRUE(failed.empty());
  EXPECT_EQ(counter.pending(), 0u);
  background.join();
}

TEST(CompletionCounter, ReportsTheFirstFailureAndEveryFailedTagThenStartsAfresh) {
  CompletionCounter counter;
  counter.Expect(3);
  counter.Complete(0, Status::Ok());
  counter.Complete(1, Status::PreconditionError("first"));
  counter.Complete(2, Status::Aborted("second"));
  std::vector<size_t> failed;
  const Status status = counter.Wait(&failed);
  EXPECT_EQ(status.code(), StatusCode::kPreconditionError);
  EXPECT_EQ(status.message(), "first");
  EXPECT_EQ(failed, (std::vector<size_t>{1, 2}));

  counter.Expect(1);
  counter.Complete(7, Status::Ok());
  EXPECT_TRUE(counter.Wait(&failed).ok()) << "a new step does not see the old failure";
  EXPECT_TRUE(failed.empty());
}

TEST(CompletionCounter, WaitingWithNothingExpectedReturnsAtOnce) {
  CompletionCounter counter;
  EXPECT_TRUE(counter.Wait(nullptr).ok());
}

}  // namespace
}  // namespace horde

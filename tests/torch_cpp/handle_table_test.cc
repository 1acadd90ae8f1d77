// The handle table at the API boundary, in one process: ids never run out or repeat
// (64-bit), a handle dropped without waiting is forgotten once its operation completes,
// and a wait survives other threads issuing thousands of handles meanwhile.
#include "torch_plugin/handle_table.h"

#include <gtest/gtest.h>

#include <climits>
#include <set>
#include <thread>

namespace horde {
namespace {

TEST(HandleTable, IdsPastThe32BitRangeAreDistinctAndWork) {
  HandleTable table(HandleId{INT_MAX} - 2);  // as after 2^31 operations
  std::set<HandleId> ids;
  for (int i = 0; i < 6; ++i) ids.insert(table.Allocate());
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_GT(*ids.rbegin(), HandleId{INT_MAX}) << "no wrap to negative or to a live id";
  for (HandleId id : ids) {
    bool done = true;
    ASSERT_TRUE(table.Poll(id, &done).ok()) << id;
    EXPECT_FALSE(done);
    table.Complete(id, Status::Ok());
    std::shared_ptr<Tensor> output;
    EXPECT_TRUE(table.WaitAndRelease(id, &output).ok()) << id;
  }
  EXPECT_EQ(table.size(), 0u);
}

TEST(HandleTable, AHandleReleasedBeforeItsOperationCompletesIsForgottenWhenItDoes) {
  HandleTable table;
  const HandleId id = table.Allocate();
  table.Release(id);
  EXPECT_EQ(table.size(), 1u) << "the operation still runs";
  bool done = false;
  EXPECT_EQ(table.Poll(id, &done).code(), StatusCode::kInvalidArgument)
      << "nobody may wait on it any more";
  table.Complete(id, Status::Internal("failed"));
  EXPECT_EQ(table.size(), 0u);
}

TEST(HandleTable, AHandleReleasedAfterItsOperationCompletedIsForgottenAtOnce) {
  HandleTable table;
  const HandleId id = table.Allocate();
  table.Complete(id, Status::Ok());
  table.Release(id);
  EXPECT_EQ(table.size(), 0u);
  table.Release(id);  // twice, or after a wait: ignored
  EXPECT_EQ(table.size(), 0u);
}

TEST(HandleTable, AWaitSurvivesOtherThreadsIssuingThousandsOfHandles) {
  HandleTable table;
  const HandleId waited = table.Allocate();
  std::thread issuer([&] {
    // Enough insertions to rehash the table many times while the waiter sleeps.
    for (int i = 0; i < 100000; ++i) table.Release(table.Allocate());
    table.Complete(waited, Status::PreconditionError("the result"));
  });
  std::shared_ptr<Tensor> output;
  const Status s = table.WaitAndRelease(waited, &output);
  issuer.join();
  EXPECT_EQ(s.message(), "the result");
  EXPECT_EQ(table.size(), 100000u) << "the others were released but never completed";
}

TEST(HandleTable, AWaiterLearnsWhenAnotherThreadReleasesItsHandle) {
  HandleTable table;
  const HandleId id = table.Allocate();
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    table.Release(id);
  });
  std::shared_ptr<Tensor> output;
  EXPECT_EQ(table.WaitAndRelease(id, &output).code(), StatusCode::kInvalidArgument);
  releaser.join();
}

}  // namespace
}  // namespace horde

// The operation table at the API boundary, in one process: ids never run out or repeat
// (64-bit), a handle dropped without waiting is forgotten once its operation completes,
// a wait survives other threads issuing thousands of handles meanwhile, and one
// operation carries a group's members, in-place targets and received splits.
#include "torch_plugin/operation_table.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <climits>
#include <set>
#include <thread>

#include "torch_plugin/torch_tensor.h"

namespace horde {
namespace torch_ops {
namespace {

TEST(OperationTable, IdsPastThe32BitRangeAreDistinctAndWork) {
  OperationTable table(HandleId{INT_MAX} - 2);  // as after 2^31 operations
  std::set<HandleId> ids;
  for (int i = 0; i < 6; ++i) ids.insert(table.Allocate());
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_GT(*ids.rbegin(), HandleId{INT_MAX}) << "no wrap to negative or to a live id";
  for (HandleId id : ids) {
    bool done = true;
    ASSERT_TRUE(table.Poll(id, &done).ok()) << id;
    EXPECT_FALSE(done);
    table.Complete(id, 0, Status::Ok());
    Operation operation;
    EXPECT_TRUE(table.WaitAndTake(id, &operation).ok()) << id;
  }
  EXPECT_EQ(table.size(), 0u);
}

TEST(OperationTable, AHandleReleasedBeforeItsOperationCompletesIsForgottenWhenItDoes) {
  OperationTable table;
  const HandleId id = table.Allocate();
  table.Release(id);
  EXPECT_EQ(table.size(), 1u) << "the operation still runs";
  bool done = false;
  EXPECT_EQ(table.Poll(id, &done).code(), StatusCode::kInvalidArgument)
      << "nobody may wait on it any more";
  table.Complete(id, 0, Status::Internal("failed"));
  EXPECT_EQ(table.size(), 0u);
}

TEST(OperationTable, AHandleReleasedAfterItsOperationCompletedIsForgottenAtOnce) {
  OperationTable table;
  const HandleId id = table.Allocate();
  table.Complete(id, 0, Status::Ok());
  table.Release(id);
  EXPECT_EQ(table.size(), 0u);
  table.Release(id);  // twice, or after a wait: ignored
  EXPECT_EQ(table.size(), 0u);
}

TEST(OperationTable, AWaitSurvivesOtherThreadsIssuingThousandsOfHandles) {
  OperationTable table;
  const HandleId waited = table.Allocate();
  std::thread issuer([&] {
    // Enough insertions to rehash the table many times while the waiter sleeps.
    for (int i = 0; i < 100000; ++i) table.Release(table.Allocate());
    table.Complete(waited, 0, Status::PreconditionError("the result"));
  });
  Operation operation;
  const Status s = table.WaitAndTake(waited, &operation);
  issuer.join();
  EXPECT_EQ(s.message(), "the result");
  EXPECT_EQ(table.size(), 100000u) << "the others were released but never completed";
}

TEST(OperationTable, AWaiterLearnsWhenAnotherThreadReleasesItsHandle) {
  OperationTable table;
  const HandleId id = table.Allocate();
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    table.Release(id);
  });
  Operation operation;
  EXPECT_EQ(table.WaitAndTake(id, &operation).code(), StatusCode::kInvalidArgument);
  releaser.join();
}

TEST(OperationTable, AGroupEndsWithItsLastMemberAndReportsItsFirstFailure) {
  OperationTable table;
  const HandleId id = table.Allocate(3, /*grouped=*/true, "process set 1: ");
  for (size_t m = 0; m < 3; ++m) {
    table.SetOutput(id, m, std::make_shared<TorchTensor>(torch::full({2}, double(m))));
  }
  table.Complete(id, 2, Status::Internal("member 2 failed"));
  table.Complete(id, 0, Status::Ok());
  bool done = true;
  ASSERT_TRUE(table.Poll(id, &done).ok());
  EXPECT_FALSE(done) << "member 1 is still running";
  table.Complete(id, 1, Status::Internal("member 1 failed"));
  Operation operation;
  const Status s = table.WaitAndTake(id, &operation);
  EXPECT_EQ(s.message(), "process set 1: member 1 failed") << "first in member order";
  EXPECT_EQ(table.size(), 0u);
}

TEST(OperationTable, AResultCarriesInPlaceTargetsAndReceivedSplits) {
  OperationTable table;
  const HandleId id = table.Allocate(2, /*grouped=*/true);
  // Member 0 ran on a contiguous copy of a transposed tensor; member 1 on its own tensor.
  const at::Tensor strided = torch::zeros({2, 3}).t();
  const at::Tensor own = torch::zeros({3});
  table.SetInPlaceTarget(id, 0, strided, /*copy_back=*/true);
  table.SetInPlaceTarget(id, 1, own, /*copy_back=*/false);
  table.SetReceivedSplits(id, torch::tensor({1, 2}, torch::kInt));
  table.SetOutput(id, 0, std::make_shared<TorchTensor>(torch::ones({3, 2})));
  table.SetOutput(id, 1, std::make_shared<TorchTensor>(own));
  table.Complete(id, 0, Status::Ok());
  table.Complete(id, 1, Status::Ok());
  Operation operation;
  ASSERT_TRUE(table.WaitAndTake(id, &operation).ok());
  OperationResult result = operation.TakeResult();
  ASSERT_EQ(result.outputs.size(), 2u);
  EXPECT_TRUE(result.grouped);
  EXPECT_TRUE(result.outputs[0].is_same(strided)) << "the caller's own tensor";
  EXPECT_TRUE(torch::equal(strided, torch::ones({3, 2}))) << "copied back";
  EXPECT_TRUE(result.outputs[1].is_same(own));
  EXPECT_TRUE(torch::equal(result.received_splits, torch::tensor({1, 2}, torch::kInt)));
}

}  // namespace
}  // namespace torch_ops
}  // namespace horde

// alltoall, reducescatter and barrier of <horde/torch.h>: results and local errors; the
// internal reducescatter and allgather into a buffer the caller keeps (torch_ops.h).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/torch_cpp/test_util.h"
#include "torch_plugin/torch_ops.h"

namespace {

using horde::StatusCode;
using horde_test::ErrorOf;
namespace ht = horde::torch;

// The rows `sender` sends to each rank: 1 or 2, differing per pair.
std::vector<int64_t> Splits(int sender) {
  std::vector<int64_t> splits;
  for (int j = 0; j < horde::size(); ++j) splits.push_back((sender + j) % 2 + 1);
  return splits;
}

// Row i of rank r's input holds 100 * r + i.
at::Tensor AlltoallInput(int rank) {
  int64_t rows = 0;
  for (int64_t n : Splits(rank)) rows += n;
  return (at::arange(rows, at::kLong) + 100 * rank).reshape({rows, 1}).repeat({1, 2});
}

TEST(Alltoall, UnevenSplitsArriveInRankOrderWithTheirCounts) {
  const int me = horde::rank();
  ht::AlltoallResult result = ht::alltoall(AlltoallInput(me), Splits(me), "cpp.alltoall");
  std::vector<at::Tensor> expected;
  std::vector<int> received;
  for (int r = 0; r < horde::size(); ++r) {
    std::vector<int64_t> splits = Splits(r);
    int64_t offset = 0;
    for (int j = 0; j < me; ++j) offset += splits[j];
    expected.push_back(AlltoallInput(r).narrow(0, offset, splits[me]));
    received.push_back(static_cast<int>(splits[me]));
  }
  EXPECT_TRUE(result.output.equal(at::cat(expected)));
  EXPECT_TRUE(result.received_splits.equal(at::tensor(received, at::kInt)));
}

TEST(Alltoall, EmptySplitsSplitEvenly) {
  at::Tensor mine = at::arange(horde::size(), at::kFloat) + 10 * horde::rank();
  ht::AlltoallResult result = ht::alltoall(mine);
  at::Tensor expected = at::arange(horde::size(), at::kFloat) * 10 + horde::rank();
  EXPECT_TRUE(result.output.equal(expected));
  EXPECT_TRUE(result.received_splits.equal(at::ones({horde::size()}, at::kInt)));
}

TEST(Alltoall, AsyncHandleGivesOutputAndReceivedSplits) {
  const int me = horde::rank();
  ht::AlltoallHandle handle = ht::alltoall_async(AlltoallInput(me), Splits(me),
                                                 "cpp.alltoall.async");
  ASSERT_TRUE(handle.valid());
  ht::AlltoallResult expected = ht::alltoall(AlltoallInput(me), Splits(me), "cpp.alltoall.sync");
  while (!handle.ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ht::AlltoallResult result = handle.wait();
  EXPECT_FALSE(handle.valid());
  EXPECT_TRUE(result.output.equal(expected.output));
  EXPECT_TRUE(result.received_splits.equal(expected.received_splits));
  EXPECT_EQ(ErrorOf([&] { handle.wait(); }).code(), StatusCode::kInvalidArgument);
  {
    ht::AlltoallHandle dropped = ht::alltoall_async(at::ones({horde::size()}), {},
                                                    "cpp.alltoall.dropped");
  }
}

TEST(Alltoall, BadSplitsThrowInvalidArgumentOnTheRankThatPassedThem) {
  std::vector<int64_t> too_many(horde::size() + 1, 1);
  horde::Status status = ErrorOf(
      [&] { ht::alltoall(at::ones({horde::size() + 1}), too_many, "cpp.bad"); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("alltoall 'cpp.bad': splits has"), std::string::npos)
      << status.message();
  EXPECT_TRUE(ht::alltoall(at::ones({horde::size()}), {}, "cpp.bad")
                  .output.equal(at::ones({horde::size()})));
}

TEST(Reducescatter, SumKeepsThisRanksShareOfUnevenRows) {
  const int size = horde::size(), me = horde::rank();
  const int64_t rows = 2 * size + 1;
  at::Tensor mine = at::arange(rows * 2, at::kDouble).reshape({rows, 2}) * (me + 1);
  at::Tensor result = ht::reducescatter(mine, {horde::Sum, "cpp.reducescatter"});
  const int64_t start = me * 2 + std::min(me, 1), count = me < 1 ? 3 : 2;
  at::Tensor total = at::arange(rows * 2, at::kDouble).reshape({rows, 2}) * (size * (size + 1) / 2);
  EXPECT_TRUE(result.equal(total.narrow(0, start, count)));
}

TEST(Reducescatter, AverageAsyncWithPostscale) {
  at::Tensor mine = at::full({horde::size(), 3}, 2.0 * (horde::rank() + 1));
  at::Tensor result =
      ht::reducescatter_async(mine, {horde::Average, "cpp.rs.async", 1.0, 0.5}).wait();
  EXPECT_TRUE(result.equal(at::full({1, 3}, (horde::size() + 1) / 2.0)));
}

TEST(Reducescatter, OtherOpsThrowInvalidArgument) {
  horde::Status status = ErrorOf([] {
    ht::reducescatter(at::ones({2}), {horde::Max, "cpp.rs.max"});
  });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("reducescatter supports Sum and Average"), std::string::npos)
      << status.message();
}

TEST(Landing, ReducescatterAndAllgatherWriteIntoTheBufferGiven) {
  namespace ops = horde::torch_ops;
  const int size = horde::size(), me = horde::rank();
  at::Tensor mine = at::arange(2 * size, at::kFloat) * (me + 1);
  at::Tensor share = at::full({2}, -1.0f);
  at::Tensor reduced = ops::Synchronize(
      ops::ReducescatterAsync(mine, "cpp.landing.rs", horde::Sum, 1.0, 1.0, 0, share));
  EXPECT_EQ(reduced.data_ptr(), share.data_ptr());
  EXPECT_TRUE(share.equal(at::arange(2 * me, 2 * me + 2, at::kFloat) * (size * (size + 1) / 2)));
  at::Tensor whole = at::full({2 * size}, -1.0f);
  at::Tensor gathered = ops::Synchronize(ops::AllgatherAsync(share, "cpp.landing.ag", 0, whole));
  EXPECT_EQ(gathered.data_ptr(), whole.data_ptr());
  EXPECT_TRUE(whole.equal(at::arange(2 * size, at::kFloat) * (size * (size + 1) / 2)));
}

TEST(Landing, OfTheWrongShapeOrDtypeIsAClearError) {
  namespace ops = horde::torch_ops;
  horde::Status status = ErrorOf([] {
    ops::Synchronize(ops::AllgatherAsync(at::ones({2}), "cpp.landing.shape", 0, at::ones({3})));
  });
  EXPECT_NE(status.message().find("the output given has shape [3]; the result has [" +
                                  std::to_string(2 * horde::size()) + "]"),
            std::string::npos)
      << status.message();
  status = ErrorOf([] {
    ops::AllgatherAsync(at::ones({2}), "cpp.landing.dtype", 0, at::ones({2}, at::kDouble));
  });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("the output tensor must have the input's dtype and device"),
            std::string::npos)
      << status.message();
  // The job goes on.
  EXPECT_TRUE(ht::allreduce(at::ones({2}), {horde::Sum, "cpp.landing.after"})
                  .equal(at::full({2}, static_cast<float>(horde::size()))));
}

TEST(Barrier, ReturnsOnEveryRank) {
  ht::Handle before = ht::allreduce_async(at::ones({4}), {horde::Sum, "cpp.before.barrier"});
  ht::barrier();
  EXPECT_TRUE(before.ready());
  EXPECT_TRUE(before.wait().equal(at::full({4}, horde::size(), at::kFloat)));
}

}  // namespace

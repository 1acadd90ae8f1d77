// Basics and the three collectives of <horde/torch.h>: every dtype, blocking, async and
// in place, and the errors every rank must see.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "tests/torch_cpp/test_util.h"

namespace {

using horde::Status;
using horde::StatusCode;
using horde_test::ErrorOf;
namespace ht = horde::torch;

TEST(Basics, TopologyOfOneHost) {
  ASSERT_TRUE(horde::is_initialized());
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");  // unset without mpirun
  EXPECT_EQ(horde::size(), world ? std::atoi(world) : 1);
  EXPECT_EQ(horde::local_size(), horde::size());
  EXPECT_EQ(horde::local_rank(), horde::rank());
  EXPECT_EQ(horde::cross_size(), 1);
  EXPECT_EQ(horde::cross_rank(), 0);
  EXPECT_TRUE(horde::is_homogeneous());
  at::Tensor ranks = ht::allgather(at::full({1}, horde::rank(), at::kInt));
  EXPECT_TRUE(ranks.equal(at::arange(horde::size(), at::kInt)));
}

TEST(Basics, ShutdownAbortsPendingWorkAndInitStartsAgain) {
  // Asked for by rank 0 only, so it can never run (unless rank 0 is alone).
  const bool root = horde::rank() == 0 && horde::size() > 1;
  ht::Handle unmatched;
  if (root) unmatched = ht::allreduce_async(at::ones({2}), {horde::Sum, "unmatched"});
  horde::shutdown();
  EXPECT_FALSE(horde::is_initialized());
  if (root) {
    EXPECT_EQ(ErrorOf([&] { unmatched.wait(); }).code(), StatusCode::kAborted);
  }
  EXPECT_EQ(ErrorOf([] { horde::size(); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorOf([] { ht::allreduce(at::ones({2})); }).code(), StatusCode::kInvalidArgument);

  horde::init();
  EXPECT_TRUE(horde::is_initialized());
  EXPECT_TRUE(
      ht::allreduce(at::ones({2}), {horde::Sum}).equal(at::full({2}, horde::size(), at::kFloat)));
}

// Small integers, so every reduction is exact in every dtype, 8-bit ones included.
at::Tensor RankInput(int rank, at::ScalarType dtype) {
  return (at::arange(12, at::kDouble).reshape({3, 4}).remainder(3) + rank).to(dtype);
}

at::Tensor Expected(horde::ReduceOp op, at::ScalarType dtype) {
  at::Tensor acc = RankInput(0, at::kDouble);
  for (int r = 1; r < horde::size(); ++r) {
    at::Tensor x = RankInput(r, at::kDouble);
    if (op == horde::Min)
      acc = at::minimum(acc, x);
    else if (op == horde::Max)
      acc = at::maximum(acc, x);
    else if (op == horde::Product)
      acc = acc * x;
    else
      acc = acc + x;
  }
  if (op == horde::Average) {
    acc = acc / horde::size();
    if (!at::isFloatingType(dtype)) acc = acc.trunc();  // as (sum / size).to(dtype) does
  }
  return acc.to(dtype);
}

class Collectives : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(Collectives, AllreduceEachOp) {
  const at::ScalarType dtype = GetParam();
  for (horde::ReduceOp op : {horde::Sum, horde::Average, horde::Min, horde::Max, horde::Product}) {
    at::Tensor result = ht::allreduce(RankInput(horde::rank(), dtype), {op});
    EXPECT_EQ(result.scalar_type(), dtype);
    EXPECT_TRUE(result.equal(Expected(op, dtype))) << horde::ReduceOpName(op) << ": " << result;
  }
}

TEST_P(Collectives, AllreduceInPlaceOnANonContiguousTensor) {
  at::Tensor input = RankInput(horde::rank(), GetParam());
  at::Tensor transposed = input.t();
  ASSERT_FALSE(transposed.is_contiguous());
  at::Tensor result = ht::allreduce_(transposed, {horde::Sum, "in_place"});
  EXPECT_TRUE(result.is_same(transposed));
  EXPECT_TRUE(input.equal(Expected(horde::Sum, GetParam())));
}

TEST_P(Collectives, AllgatherWithPerRankFirstDimensions) {
  const at::ScalarType dtype = GetParam();
  const int rank = horde::rank();
  at::Tensor mine = at::full({rank + 1, 2}, rank, at::TensorOptions().dtype(dtype));
  at::Tensor gathered = ht::allgather(mine, "gather");
  ASSERT_EQ(gathered.size(0), horde::size() * (horde::size() + 1) / 2);
  int64_t row = 0;
  for (int r = 0; r < horde::size(); ++r) {
    EXPECT_TRUE(gathered.narrow(0, row, r + 1).equal(at::full({r + 1, 2}, r, dtype)))
        << "rank " << r;
    row += r + 1;
  }
}

TEST_P(Collectives, BroadcastOutOfPlaceAndInPlace) {
  const int root = horde::size() - 1;
  at::Tensor mine = RankInput(horde::rank(), GetParam());
  at::Tensor expected = RankInput(root, GetParam());
  at::Tensor result = ht::broadcast(mine, root);
  EXPECT_TRUE(result.equal(expected));
  EXPECT_TRUE(mine.equal(RankInput(horde::rank(), GetParam()))) << "the input must be untouched";
  EXPECT_TRUE(ht::broadcast_(mine, root, "bcast").is_same(mine));
  EXPECT_TRUE(mine.equal(expected));
}

TEST_P(Collectives, BroadcastInPlaceOnANonContiguousTensorBlockingAndAsync) {
  const int root = horde::size() - 1;
  at::Tensor expected = RankInput(root, GetParam()).t();
  at::Tensor blocking = RankInput(horde::rank(), GetParam());
  at::Tensor transposed = blocking.t();
  ASSERT_FALSE(transposed.is_contiguous());
  EXPECT_TRUE(ht::broadcast_(transposed, root, "bcast.noncontig").is_same(transposed));
  EXPECT_TRUE(transposed.equal(expected));

  at::Tensor async = RankInput(horde::rank(), GetParam()).t();
  ht::Handle handle = ht::broadcast_async_(async, root, "bcast.noncontig.async");
  EXPECT_TRUE(handle.wait().is_same(async));
  EXPECT_TRUE(async.equal(expected));
}

TEST_P(Collectives, AllreduceAsyncInPlaceOnANonContiguousTensorWritesBackAtWait) {
  at::Tensor input = RankInput(horde::rank(), GetParam());
  at::Tensor transposed = input.t();
  ht::Handle handle = ht::allreduce_async_(transposed, {horde::Sum, "in_place.async"});
  while (!handle.ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Completed, yet the caller's tensor is written only by wait(), as in Python.
  EXPECT_TRUE(input.equal(RankInput(horde::rank(), GetParam())));
  EXPECT_TRUE(handle.wait().is_same(transposed));
  EXPECT_TRUE(input.equal(Expected(horde::Sum, GetParam())));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Collectives,
                         ::testing::Values(at::kByte, at::kChar, at::kShort, at::kInt, at::kLong,
                                           at::kHalf, at::kBFloat16, at::kFloat, at::kDouble),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(Collectives, BoolReductionsAreLogical) {
  auto bools = [](std::vector<int> values) { return at::tensor(values, at::kInt).to(at::kBool); };
  at::Tensor mine = bools({horde::rank() == 0, 1, 0});
  EXPECT_TRUE(ht::allreduce(mine, {horde::Sum}).equal(bools({1, 1, 0})));
  EXPECT_TRUE(ht::allreduce(mine, {horde::Min}).equal(bools({horde::size() == 1, 1, 0})));
}

TEST(Collectives, PrescaleAndPostscale) {
  at::Tensor mine = at::full({5}, horde::rank() + 1.0, at::kFloat);
  at::Tensor result = ht::allreduce(mine, {horde::Sum, "scaled", 2.0, 0.25});
  const double sum = horde::size() * (horde::size() + 1) / 2.0;
  EXPECT_TRUE(result.allclose(at::full({5}, sum * 2.0 * 0.25, at::kFloat)));
}

TEST(Collectives, InPlaceIntoAViewOfALeafThatRequiresGrad) {
  // The write back is the operation's, outside autograd (torch refuses an in-place op on
  // such a view otherwise).
  at::Tensor leaf = RankInput(horde::rank(), at::kFloat).requires_grad_();
  at::Tensor view = leaf.t();
  EXPECT_TRUE(ht::allreduce_(view, {horde::Sum, "in_place.grad_view"}).is_same(view));
  EXPECT_TRUE(leaf.detach().equal(Expected(horde::Sum, at::kFloat)));
  EXPECT_TRUE(ht::broadcast_(view, 0, "bcast.grad_view").is_same(view));
  EXPECT_FALSE(leaf.grad_fn());
}

TEST(Handles, ReadyThenWaitOnce) {
  ht::Handle handle = ht::allreduce_async(at::ones({1000}), {horde::Sum, "async"});
  ASSERT_TRUE(handle.valid());
  while (!handle.ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(handle.wait().equal(at::full({1000}, horde::size(), at::kFloat)));
  EXPECT_FALSE(handle.valid());
  EXPECT_EQ(ErrorOf([&] { handle.wait(); }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorOf([&] { handle.ready(); }).code(), StatusCode::kInvalidArgument);
}

TEST(Handles, MovedAndDroppedHandlesComplete) {
  at::Tensor target = at::ones({4});
  ht::Handle moved;
  {
    ht::Handle first = ht::allreduce_async_(target, {horde::Sum, "moved"});
    moved = std::move(first);
    EXPECT_FALSE(first.valid());
  }
  EXPECT_TRUE(moved.wait().is_same(target));
  { ht::Handle dropped = ht::broadcast_async_(target, 0, "dropped"); }  // waits when dropped
  EXPECT_TRUE(target.equal(at::full({4}, horde::size(), at::kFloat)));
}

TEST(Errors, RanksThatDisagreeFailOnEveryRankAndTheNextOpWorks) {
  if (horde::size() == 1) GTEST_SKIP() << "needs ranks to disagree";
  const at::ScalarType dtype = horde::rank() == 0 ? at::kFloat : at::kInt;
  Status dtypes = ErrorOf([&] {
    ht::allreduce(at::ones({3}, dtype), {horde::Sum, "mixed.dtype"});
  });
  EXPECT_EQ(dtypes.code(), StatusCode::kPreconditionError);
  EXPECT_NE(dtypes.message().find("mixed.dtype"), std::string::npos) << dtypes.message();

  Status shapes = ErrorOf([&] { ht::broadcast(at::ones({horde::rank() + 1}), 0, "mixed.shape"); });
  EXPECT_EQ(shapes.code(), StatusCode::kPreconditionError) << shapes.message();

  EXPECT_TRUE(
      ht::allreduce(at::ones({3}), {horde::Sum}).equal(at::full({3}, horde::size(), at::kFloat)));
}

TEST(Errors, LocalMisuseIsAnInvalidArgument) {
  EXPECT_EQ(ErrorOf([] { ht::broadcast(at::ones({2}), horde::size()); }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorOf([] { ht::allreduce(at::Tensor()); }).code(), StatusCode::kInvalidArgument);
  const Status undefined = ErrorOf([] { ht::allreduce_(at::Tensor()); });
  EXPECT_EQ(undefined.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(undefined.message(), "allreduce: the tensor is undefined");
  EXPECT_EQ(ErrorOf([] { ht::broadcast_(at::Tensor(), 0); }).message(),
            "broadcast: the tensor is undefined");
  EXPECT_EQ(ErrorOf([] { ht::allreduce(at::ones({2}, at::kComplexFloat)); }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorOf([] { ht::allreduce(at::ones({2}, at::kBool), {horde::Average}); }).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace

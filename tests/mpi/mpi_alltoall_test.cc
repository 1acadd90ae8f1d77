// MpiAlltoall over real MPI, without torch: run under mpirun with 2 and 4 ranks. The
// entries are handed to the runtime directly, so splits reach the op unchecked, as no
// framework adapter would let them: a rank that cannot take part must fail there and
// fail the others, never leave them waiting in MPI.
#include <gtest/gtest.h>

#include "core/api.h"
#include "core/host_tensor.h"
#include "mpi_ops/make_runtime.h"
#include "tests/mpi/host_allocator.h"
#include "tests/mpi/pending_op.h"

namespace horde {
namespace {

int Rank() { return CurrentRuntime()->topology().rank; }
int Size() { return CurrentRuntime()->topology().size; }

using Outcome = testing::PendingOp;

// Submits an alltoall of `input` (int64 rows of one element) with `splits` as given.
std::shared_ptr<Outcome> Alltoall(const std::string& name, std::shared_ptr<HostTensor> input,
                                  std::vector<int64_t> splits,
                                  std::shared_ptr<HostTensor> received_splits) {
  auto outcome = std::make_shared<Outcome>();
  Request request;
  request.op = OpType::kAlltoall;
  request.name = name;
  request.dtype = input->dtype();
  request.shape = input->shape();
  TensorEntry entry;
  entry.input = input;
  entry.splits = std::move(splits);
  entry.received_splits = received_splits;
  OutputAllocator host = testing::HostAllocator(input->dtype());
  entry.allocate_output = [host, outcome](const TensorShape& shape, std::shared_ptr<Tensor>* out) {
    HORDE_RETURN_IF_ERROR(host(shape, out));
    outcome->output = *out;
    return Status::Ok();
  };
  entry.callback = outcome->Callback();
  Status s = CurrentRuntime()->Enqueue(std::move(request), std::move(entry));
  if (!s.ok()) outcome->Finish(s);
  return outcome;
}

// Rank r's rows: 10 * r + i, one per rank.
std::shared_ptr<HostTensor> RowsOf(int rank) {
  auto t = std::make_shared<HostTensor>(DataType::kInt64, TensorShape{Size()});
  for (int i = 0; i < Size(); ++i) t->as<int64_t>()[i] = 10 * rank + i;
  return t;
}

void ExpectEvenAlltoallWorks(const std::string& name) {
  auto received = std::make_shared<HostTensor>(DataType::kInt32, TensorShape{Size()});
  auto outcome = Alltoall(name, RowsOf(Rank()), {}, received);
  ASSERT_TRUE(outcome->Wait().ok()) << outcome->status.message();
  auto* out = static_cast<int64_t*>(outcome->output->data());
  for (int r = 0; r < Size(); ++r) {
    EXPECT_EQ(out[r], 10 * r + Rank());
    EXPECT_EQ(received->as<int32_t>()[r], 1);
  }
}

TEST(MpiAlltoall, EmptySplitsSplitEvenly) { ExpectEvenAlltoallWorks("even"); }

TEST(MpiAlltoall, InvalidSplitsOnOneRankFailEveryRankAndTheNextOneWorks) {
  const int bad_rank = Size() - 1;
  std::vector<int64_t> splits(Size(), 1);
  if (Rank() == bad_rank) splits[0] = 2;  // sums to one more than the rows
  Status s = Alltoall("bad.on.one.rank", RowsOf(Rank()), splits, nullptr)->Wait();
  ASSERT_FALSE(s.ok());
  if (Rank() == bad_rank) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("alltoall 'bad.on.one.rank': splits sum to"), std::string::npos)
        << s.message();
  } else {
    EXPECT_EQ(s.message().rfind("alltoall 'bad.on.one.rank' did not run on any rank: rank " +
                                    std::to_string(bad_rank) +
                                    ": alltoall 'bad.on.one.rank': splits sum to",
                                0),
              0u)
        << s.message();
  }
  ExpectEvenAlltoallWorks("after.bad.on.one.rank");
}

// Rank 0 fails after the counts are exchanged (its received_splits tensor is too long).
TEST(MpiAlltoall, ALocalFailureAfterTheCountExchangeFailsEveryRank) {
  auto wrong_size = std::make_shared<HostTensor>(DataType::kInt32, TensorShape{Size() + 1});
  std::shared_ptr<HostTensor> received = Rank() == 0 ? wrong_size : nullptr;
  Status s = Alltoall("bad.received.splits", RowsOf(Rank()), {}, received)->Wait();
  ASSERT_FALSE(s.ok());
  // The others get rank 0's reason too.
  const std::string expected =
      Rank() == 0 ? "received_splits must be an int32 tensor"
                  : "alltoall 'bad.received.splits' did not run on any rank: rank 0: "
                    "alltoall 'bad.received.splits': received_splits must be an int32 tensor";
  EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  ExpectEvenAlltoallWorks("after.bad.received.splits");
}

}  // namespace
}  // namespace horde

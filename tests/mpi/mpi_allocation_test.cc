// Collectives that allocate, over real MPI (2 and 4 ranks): when one rank cannot
// allocate an output or grow a buffer, every rank fails that operation with the
// reason, none is left inside MPI, and the next operation works. The failures are
// injected on the last rank only, through the ops' host allocator and the entries'
// output allocators (no MPI call is faked).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/host_tensor.h"
#include "core/op_registry.h"
#include "core/runtime.h"
#include "mpi_ops/mpi_allgather.h"
#include "mpi_ops/mpi_allreduce.h"
#include "mpi_ops/mpi_reducescatter.h"
#include "mpi_ops/mpi_transport.h"
#include "tests/mpi/host_allocator.h"
#include "tests/mpi/pending_op.h"

namespace horde {
namespace mpi {
namespace {

using Pending = testing::PendingOp;

constexpr size_t kBufferLimit = 1 << 20;  // the last rank's buffers cannot grow past this
const char kNoOutput[] = "could not allocate the output: out of memory (injected)";

// A runtime of its own over every rank, whose ops' buffers on the last rank cannot grow
// past kBufferLimit. The global runtime main() started is stopped first: two runtimes'
// threads in MPI at once are fine for MPI, but ThreadSanitizer cannot see Open MPI's own
// locks and reports one thread progressing the other's request.
class AllocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ShutdownRuntime();
    std::shared_ptr<MpiContext> context;
    ASSERT_TRUE(MpiContext::Create(&context).ok());
    rank_ = context->topology().rank;
    size_ = context->topology().size;
    HostAllocator allocate = AlignedAllocate;
    if (rank_ == size_ - 1) {
      allocate = [](size_t alignment, size_t bytes) {
        return bytes > kBufferLimit ? nullptr : AlignedAllocate(alignment, bytes);
      };
    }
    auto types = std::make_shared<MpiDatatypes>();
    auto ops = std::make_unique<OpRegistry>();
    ops->Register(OpType::kAllreduce, std::make_unique<MpiAllreduce>(
                                          context, types, std::make_shared<Timeline>(),
                                          std::make_shared<FusionBuffer>(context, allocate)));
    ops->Register(OpType::kAllgather, std::make_unique<MpiAllgather>(context, allocate));
    ops->Register(OpType::kReducescatter,
                  std::make_unique<MpiReducescatter>(context, types, allocate));
    runtime_ = std::make_unique<Runtime>(Config(), context->topology(),
                                         std::make_unique<MpiTransport>(context), std::move(ops));
  }
  void TearDown() override { runtime_.reset(); }

  // Submits `op` on a float tensor of `elements` per named tensor, as one batch (so they
  // fuse); outputs the op allocates fail on the last rank if `no_output` there.
  std::vector<std::shared_ptr<Pending>> Submit(OpType op, const std::vector<std::string>& names,
                                               int64_t elements, bool no_output = false) {
    std::vector<Request> requests;
    std::vector<TensorEntry> entries;
    std::vector<std::shared_ptr<Pending>> pending;
    for (const std::string& name : names) {
      auto input = std::make_shared<HostTensor>(DataType::kFloat32, TensorShape{elements});
      for (int64_t i = 0; i < elements; ++i) input->as<float>()[i] = 1.0f;
      Request request;
      request.op = op;
      request.name = name;
      request.shape = input->shape();
      pending.push_back(std::make_shared<Pending>());
      TensorEntry entry;
      entry.name = name;
      entry.input = input;
      if (op == OpType::kAllreduce) entry.output = input;
      const bool fail = no_output && rank_ == size_ - 1;
      OutputAllocator host = testing::HostAllocator(DataType::kFloat32);
      entry.allocate_output = [fail, host](const TensorShape& shape, std::shared_ptr<Tensor>* out) {
        return fail ? Status::Internal(kNoOutput) : host(shape, out);
      };
      entry.callback = pending.back()->Callback();
      requests.push_back(std::move(request));
      entries.push_back(std::move(entry));
    }
    EXPECT_TRUE(runtime_->Enqueue(&requests, &entries).ok());
    return pending;
  }

  // Every op fails on every rank: with `reason` on the last rank, and elsewhere with an
  // error naming the op, the last rank and its reason.
  void ExpectFailedEverywhere(const std::vector<std::shared_ptr<Pending>>& pending,
                              const std::string& what, const std::string& reason) {
    for (const auto& p : pending) {
      const Status s = p->Wait();
      ASSERT_FALSE(s.ok()) << what;
      if (rank_ == size_ - 1) {
        EXPECT_NE(s.message().find(reason), std::string::npos) << s.message();
      } else {
        const std::string expected = what + " did not run on any rank: rank " +
                                     std::to_string(size_ - 1) + ": " + reason;
        EXPECT_EQ(s.message().rfind(expected, 0), 0u) << s.message();
      }
    }
  }

  void ExpectAllOk(const std::vector<std::shared_ptr<Pending>>& pending) {
    for (const auto& p : pending) {
      const Status s = p->Wait();
      EXPECT_TRUE(s.ok()) << s.message();
    }
  }

  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<Runtime> runtime_;
};

TEST_F(AllocationTest, AnAllgatherOutputOneRankCannotAllocateFailsEveryRank) {
  ExpectFailedEverywhere(Submit(OpType::kAllgather, {"gathered"}, 4, true), "allgather 'gathered'",
                         kNoOutput);
  ExpectAllOk(Submit(OpType::kAllgather, {"gathered.next"}, 4));
}

TEST_F(AllocationTest, AReducescatterOutputOneRankCannotAllocateFailsEveryRank) {
  ExpectFailedEverywhere(Submit(OpType::kReducescatter, {"scattered"}, 8, true),
                         "reducescatter 'scattered'", kNoOutput);
  ExpectAllOk(Submit(OpType::kReducescatter, {"scattered.next"}, 8));
}

TEST_F(AllocationTest, AFusionBufferOneRankCannotGrowFailsTheFusedAllreduceEverywhere) {
  // Two tensors of 600 KB fuse into one buffer of 1.2 MB, past the last rank's limit.
  const int64_t elements = 150 * 1024;
  ExpectFailedEverywhere(Submit(OpType::kAllreduce, {"big.a", "big.b"}, elements),
                         "allreduce of 2 tensors ('big.a', 'big.b')",
                         "could not allocate a host buffer of");
  auto small = Submit(OpType::kAllreduce, {"small.a", "small.b"}, 1024);
  ExpectAllOk(small);
}

TEST_F(AllocationTest, FusedAllgatherBuffersOneRankCannotGrowFailEveryRank) {
  const int64_t elements = 150 * 1024 /
                           size_;  // outputs of 600 KB fuse into a 1.2 MB receive buffer
  ExpectFailedEverywhere(Submit(OpType::kAllgather, {"rows.a", "rows.b"}, elements),
                         "allgather of 2 tensors ('rows.a', 'rows.b')",
                         "could not allocate a host buffer of");
  ExpectAllOk(Submit(OpType::kAllgather, {"rows.c", "rows.d"}, 16));
}

TEST_F(AllocationTest, AFusedReducescatterBufferOneRankCannotGrowFailsEveryRank) {
  ExpectFailedEverywhere(Submit(OpType::kReducescatter, {"shards.a", "shards.b"}, 150 * 1024),
                         "reducescatter of 2 tensors", "could not allocate a host buffer of");
  ExpectAllOk(Submit(OpType::kReducescatter, {"shards.c", "shards.d"}, 64));
}

}  // namespace
}  // namespace mpi
}  // namespace horde

// Where a joined rank's identity tensors (zeros for these sums) live: in the memory the
// other ranks' tensors are in, so that every rank runs the same implementation (a joined rank that
// offered host zeros to a GPU allreduce would run MPI while the others wait in NCCL).

#include <gtest/gtest.h>

#include <utility>

#include "core/op_registry.h"
#include "tests/cpp/runtime_harness.h"

namespace horde {
namespace {

using testing::ExpectOk;
using testing::FloatTensor;
using testing::Outcome;

// Host memory that reports a GPU: how the runtime sees a framework's GPU tensor.
class GpuLikeTensor : public FloatTensor {
 public:
  GpuLikeTensor(size_t n, int32_t device) : FloatTensor(n, 0.0f), device_(device) {}
  int32_t device() const override { return device_; }

 private:
  int32_t device_;
};

// What each rank's op saw: per executed tensor, its name and device.
struct Seen {
  std::mutex mu;
  std::vector<std::pair<std::string, int32_t>> entries[2];
  std::vector<int32_t> zeros_made_on[2];

  std::vector<std::pair<std::string, int32_t>> Entries(int rank) {
    std::lock_guard<std::mutex> lock(mu);
    return entries[rank];
  }
};

class DeviceRecordingOp : public CollectiveOp {
 public:
  DeviceRecordingOp(Seen* seen, int rank) : seen_(seen), rank_(rank) {}
  bool Enabled(const Response&, const std::vector<TensorEntry>&) const override { return true; }
  Status Execute(std::vector<TensorEntry>& entries, const Response&) override {
    std::lock_guard<std::mutex> lock(seen_->mu);
    for (const auto& e : entries) seen_->entries[rank_].emplace_back(e.name, e.input->device());
    return Status::Ok();
  }

 private:
  Seen* seen_;
  int rank_;
};

// Two ranks whose registries make "device" zeros as GpuLikeTensors, noting the device.
class JoinRanks {
 public:
  JoinRanks()
      : ranks_([this](int rank) {
          auto ops = std::make_unique<OpRegistry>();
          ops->Register(OpType::kAllreduce, std::make_unique<DeviceRecordingOp>(&seen_, rank));
          ops->SetDeviceIdentity([this, rank](DataType, ReduceOp, const TensorShape& shape,
                                              int32_t device, std::shared_ptr<Tensor>* out) {
            std::lock_guard<std::mutex> lock(seen_.mu);
            seen_.zeros_made_on[rank].push_back(device);
            *out = std::make_shared<GpuLikeTensor>(static_cast<size_t>(shape[0]), device);
            return Status::Ok();
          });
          return ops;
        }) {}

  Runtime& operator[](int rank) { return ranks_[rank]; }
  Seen& seen() { return seen_; }

 private:
  Seen seen_;
  testing::RankPair ranks_;
};

Request Allreduce(const std::string& name, int32_t device) {
  Request r;
  r.name = name;
  r.shape = {4};
  r.device = device;
  return r;
}

Request Join(int32_t device) {
  Request r;
  r.op = OpType::kJoin;
  r.shape = {1};
  r.device = device;
  return r;
}

std::shared_ptr<Tensor> TensorOn(int32_t device) {
  if (device == kCpuDevice) return std::make_shared<FloatTensor>(4);
  return std::make_shared<GpuLikeTensor>(4, device);
}

// Rank 1 joins with `join_device` after both reduced "warm" on their GPUs (rank r on
// cuda:r+2); rank 0 then reduces "grad" on `grad_device` and joins too.
void RunJoinedAllreduce(JoinRanks& ranks, int32_t join_device, int32_t grad_device) {
  Outcome warm[2], join[2], grad;
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(
        testing::Submit(ranks[rank], Allreduce("warm", rank + 2), &warm[rank], TensorOn(rank + 2))
            .ok());
  }
  for (auto& w : warm) ExpectOk(&w, "warm-up allreduce");
  ASSERT_TRUE(
      testing::Submit(ranks[1], Join(join_device), &join[1], std::make_shared<FloatTensor>(1))
          .ok());
  ASSERT_TRUE(
      testing::Submit(ranks[0], Allreduce("grad", grad_device), &grad, TensorOn(grad_device)).ok());
  ExpectOk(&grad, "allreduce with a joined rank");
  ASSERT_TRUE(
      testing::Submit(ranks[0], Join(kCpuDevice), &join[0], std::make_shared<FloatTensor>(1)).ok());
  for (auto& j : join) ExpectOk(&j, "join");
}

TEST(RuntimeJoin, ZerosGoOnTheGpuThisRankLastUsed) {
  JoinRanks ranks;
  RunJoinedAllreduce(ranks, kCpuDevice, 2);
  using Entries = std::vector<std::pair<std::string, int32_t>>;
  EXPECT_EQ(ranks.seen().Entries(0), (Entries{{"warm", 2}, {"grad", 2}}));
  // Not rank 0's cuda:2: each rank drives its own GPU.
  EXPECT_EQ(ranks.seen().Entries(1), (Entries{{"warm", 3}, {"grad", 3}}));
  EXPECT_EQ(ranks.seen().zeros_made_on[1], std::vector<int32_t>{3});
}

TEST(RuntimeJoin, ZerosGoOnTheDeviceGivenToJoin) {
  JoinRanks ranks;
  RunJoinedAllreduce(ranks, 5, 2);
  EXPECT_EQ(ranks.seen().Entries(1).back(), std::make_pair(std::string("grad"), 5));
  EXPECT_EQ(ranks.seen().zeros_made_on[1], std::vector<int32_t>{5});
}

TEST(RuntimeJoin, ZerosForAHostAllreduceStayOnTheHost) {
  JoinRanks ranks;
  RunJoinedAllreduce(ranks, 5, kCpuDevice);
  EXPECT_EQ(ranks.seen().Entries(1).back(), std::make_pair(std::string("grad"), kCpuDevice));
  EXPECT_TRUE(ranks.seen().zeros_made_on[1].empty());
}

TEST(RuntimeJoin, ABuildWithoutAGpuPathSaysSoForDeviceIdentities) {
  OpRegistry registry;
  std::shared_ptr<Tensor> identity;
  ASSERT_TRUE(
      registry.Identity(DataType::kFloat64, ReduceOp::kSum, {3}, kCpuDevice, &identity).ok());
  EXPECT_EQ(identity->device(), kCpuDevice);
  EXPECT_EQ(static_cast<double*>(identity->data())[2], 0.0);
  const Status s = registry.Identity(DataType::kFloat32, ReduceOp::kSum, {3}, 1, &identity);
  EXPECT_EQ(s.code(), StatusCode::kPreconditionError);
  EXPECT_EQ(s.message(), "this build has no GPU path for tensors on cuda:1");
}

}  // namespace
}  // namespace horde

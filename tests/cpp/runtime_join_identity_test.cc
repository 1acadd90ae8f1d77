// What a joined rank contributes to an allreduce: the identity of its reduce op (so Min
// and Max are the other ranks' extremes, Product their product), and, when it cannot
// even make that tensor, a failure of that allreduce on every rank instead of a peer
// left waiting inside the collective.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "core/op_registry.h"
#include "tests/cpp/runtime_harness.h"

namespace horde {
namespace {

using testing::ExpectOk;
using testing::FloatTensor;
using testing::Outcome;

// Records, per rank, the first input value of every tensor it executes.
struct Inputs {
  std::mutex mu;
  std::vector<float> first_values[2];
  int executions = 0;
};

class RecordingOp : public CollectiveOp {
 public:
  RecordingOp(Inputs* inputs, int rank) : inputs_(inputs), rank_(rank) {}
  bool Enabled(const Response&, const std::vector<TensorEntry>&) const override { return true; }
  Status Execute(std::vector<TensorEntry>& entries, const Response&) override {
    std::lock_guard<std::mutex> lock(inputs_->mu);
    ++inputs_->executions;
    for (auto& e : entries)
      inputs_->first_values[rank_].push_back(static_cast<float*>(e.input->data())[0]);
    return Status::Ok();
  }

 private:
  Inputs* inputs_;
  int rank_;
};

Request Allreduce(const std::string& name, ReduceOp op) {
  Request r;
  r.name = name;
  r.shape = {4};
  r.reduce_op = op;
  return r;
}

Request Join() {
  Request r;
  r.op = OpType::kJoin;
  r.shape = {1};
  return r;
}

// Rank 1 joins; rank 0 then reduces "x" with `op` and joins too. Returns x's outcome.
std::optional<Status> AllreduceWithRank1Joined(testing::RankPair& ranks, ReduceOp op) {
  Outcome join[2], x;
  EXPECT_TRUE(testing::Submit(ranks[1], Join(), &join[1], std::make_shared<FloatTensor>(1)).ok());
  EXPECT_TRUE(
      testing::Submit(ranks[0], Allreduce("x", op), &x, std::make_shared<FloatTensor>(4, 2.0f))
          .ok());
  std::optional<Status> status = x.Wait();
  EXPECT_TRUE(testing::Submit(ranks[0], Join(), &join[0], std::make_shared<FloatTensor>(1)).ok());
  for (auto& j : join) ExpectOk(&j, "join");
  return status;
}

TEST(RuntimeJoinIdentity, AJoinedRankContributesTheIdentityOfTheReduceOp) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<ReduceOp, float>> cases = {{ReduceOp::kSum, 0.0f},
                                                         {ReduceOp::kAverage, 0.0f},
                                                         {ReduceOp::kMin, inf},
                                                         {ReduceOp::kMax, -inf},
                                                         {ReduceOp::kProduct, 1.0f}};
  for (const auto& [op, identity] : cases) {
    Inputs inputs;
    testing::RankPair ranks([&](int rank) {
      auto ops = std::make_unique<OpRegistry>();
      ops->Register(OpType::kAllreduce, std::make_unique<RecordingOp>(&inputs, rank));
      return ops;
    });
    std::optional<Status> status = AllreduceWithRank1Joined(ranks, op);
    ASSERT_TRUE(status.has_value() && status->ok()) << ReduceOpName(op);
    std::lock_guard<std::mutex> lock(inputs.mu);
    EXPECT_EQ(inputs.first_values[0], std::vector<float>{2.0f}) << ReduceOpName(op);
    EXPECT_EQ(inputs.first_values[1], std::vector<float>{identity}) << ReduceOpName(op);
  }
}

TEST(RuntimeJoinIdentity, AJoinedRankThatCannotMakeItsIdentityFailsTheAllreduceOnEveryRank) {
  Inputs inputs;
  testing::RankPair ranks([&](int rank) {
    IdentityMaker host = HostIdentity;
    if (rank == 1) {
      host = [](DataType, ReduceOp, const TensorShape&, int32_t, std::shared_ptr<Tensor>*) {
        return Status::Internal("could not allocate 16 bytes of host memory");
      };
    }
    auto ops = std::make_unique<OpRegistry>(host);
    ops->Register(OpType::kAllreduce, std::make_unique<RecordingOp>(&inputs, rank));
    return ops;
  });
  std::optional<Status> status = AllreduceWithRank1Joined(ranks, ReduceOp::kSum);
  ASSERT_TRUE(status.has_value()) << "rank 0 was left waiting";
  EXPECT_EQ(status->code(), StatusCode::kPreconditionError);
  EXPECT_EQ(
      status->message(),
      "allreduce 'x' did not run on any rank: rank 1: the identity this joined rank contributes: "
      "could not allocate 16 bytes of host memory");
  {
    std::lock_guard<std::mutex> lock(inputs.mu);
    EXPECT_EQ(inputs.executions, 0) << "no rank entered the collective";
  }
  // Both ranks are active again: the next allreduce runs.
  Outcome next[2];
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(testing::Submit(ranks[rank], Allreduce("next", ReduceOp::kSum), &next[rank],
                                std::make_shared<FloatTensor>(4))
                    .ok());
  }
  for (auto& n : next) ExpectOk(&n, "the next allreduce");
}

}  // namespace
}  // namespace horde

#include "core/op_traits.h"

#include <gtest/gtest.h>

#include "core/op_registry.h"
#include "core/response_builder.h"

namespace horde {
namespace {

std::vector<OpType> EveryOp() {
  std::vector<OpType> ops;
  for (int i = 0; i < kNumOpTypes; ++i) ops.push_back(static_cast<OpType>(i));
  return ops;
}

Request Ask(OpType op, int rank) {
  Request r;
  r.rank = rank;
  r.name = "t";
  r.op = op;
  r.shape = {4, 3};
  return r;
}

TEST(OpTraits, EachOpHasItsOwnEntry) {
  for (OpType op : EveryOp()) {
    EXPECT_EQ(TraitsOf(op).op, op);
    EXPECT_STREQ(OpTypeName(op), TraitsOf(op).name);
  }
  EXPECT_STREQ(OpTypeName(OpType::kReducescatter), "reducescatter");
}

// The coordinator (from rank 0's request) and the fast path (from each rank's own) count
// the same bytes, since both requests agree in what is counted.
TEST(OpTraits, FusionBytesCountTheTensorOrTheGatheredOutput) {
  Request allreduce = Ask(OpType::kAllreduce, 0);
  Response response = BuildResponse({allreduce, Ask(OpType::kAllreduce, 1)}, {});
  EXPECT_EQ(FusionBytes(response, allreduce), 4 * 3 * 4);

  Request scatter = Ask(OpType::kReducescatter, 0);
  response = BuildResponse({scatter, Ask(OpType::kReducescatter, 1)}, {});
  EXPECT_EQ(FusionBytes(response, scatter), 4 * 3 * 4);

  Request gather = Ask(OpType::kAllgather, 0);
  Request more_rows = Ask(OpType::kAllgather, 1);
  more_rows.shape = {6, 3};
  response = BuildResponse({gather, more_rows}, {});
  EXPECT_EQ(FusionBytes(response, gather), (4 + 6) * 3 * 4);
  EXPECT_EQ(FusionBytes(response, more_rows), (4 + 6) * 3 * 4);

  Request broadcast = Ask(OpType::kBroadcast, 0);
  EXPECT_EQ(FusionBytes(BuildResponse({broadcast, Ask(OpType::kBroadcast, 1)}, {}), broadcast), 0);
}

// Each way two ranks' requests can differ, and the bit that makes it an error.
struct Difference {
  AgreedField field;
  void (*apply)(Request*);
};

TEST(OpTraits, RanksMustAgreeInExactlyTheFieldsOfTheEntry) {
  const Difference differences[] = {
      {kAgreeRoot, [](Request* r) { r->root = 1; }},
      {kAgreeShape, [](Request* r) { r->shape[0] = 5; }},
      {kAgreeRowShape, [](Request* r) { r->shape[1] = 5; }},
      {kAgreeReduceOp, [](Request* r) { r->reduce_op = ReduceOp::kMax; }},
      {kAgreeScale, [](Request* r) { r->prescale = 2; }},
      {kAgreeScale, [](Request* r) { r->postscale = 2; }},
  };
  for (OpType op : EveryOp()) {
    if (op == OpType::kJoin) continue;  // joins are counted, never compared
    for (const Difference& d : differences) {
      Request other = Ask(op, 1);
      d.apply(&other);
      // A different row shape is a different shape too.
      uint32_t catches = d.field == kAgreeRowShape ? kAgreeRowShape | kAgreeShape : d.field;
      const bool must_agree = (TraitsOf(op).agreed & catches) != 0;
      Response response = BuildResponse({Ask(op, 0), other}, {});
      EXPECT_EQ(response.kind == Response::Kind::kError, must_agree)
          << OpTypeName(op) << " field bit " << d.field << ": " << response.error_message;
    }
  }
}

TEST(OpTraits, OnlyOpsThatAllowJoinedRanksRunWhileARankHasJoined) {
  for (OpType op : EveryOp()) {
    if (op == OpType::kJoin) continue;
    Response response = BuildResponse({Ask(op, 0)}, {1});
    EXPECT_EQ(response.kind == Response::Kind::kCollective, TraitsOf(op).with_joined_ranks)
        << OpTypeName(op);
    EXPECT_EQ(response.with_joined, TraitsOf(op).with_joined_ranks) << OpTypeName(op);
  }
}

class NoOp : public CollectiveOp {
 public:
  bool Enabled(const Response&, const std::vector<TensorEntry>&) const override { return true; }
  Status Execute(std::vector<TensorEntry>&, const Response&) override { return Status::Ok(); }
};

TEST(OpTraits, ARegistryMissingAnImplementationNamesTheOp) {
  OpRegistry ops;
  for (OpType op : EveryOp()) {
    if (op != OpType::kBarrier && TraitsOf(op).has_implementation) {
      ops.Register(op, std::make_unique<NoOp>());
    }
  }
  Status missing = ops.CheckEveryOpImplemented();
  EXPECT_EQ(missing.code(), StatusCode::kInternal);
  EXPECT_EQ(missing.message(),
            "no implementation is registered for barrier; each operation needs at least one "
            "(mpi_ops/make_runtime.cc)");
  ops.Register(OpType::kBarrier, std::make_unique<NoOp>());
  EXPECT_TRUE(ops.CheckEveryOpImplemented().ok());  // join needs none
}

}  // namespace
}  // namespace horde

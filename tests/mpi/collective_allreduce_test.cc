// MpiAllreduce (with its FusionCopier, host_scale and postscale) over real MPI
// processes, without torch: run under mpirun with 1, 2 and 4 ranks. Every dtype with
// every reduce op it supports, tensors of 0, 1, 13 elements and larger than the fusion
// buffer, in place and into another tensor, alone and fused; results are compared
// exactly with what each rank computes from every rank's inputs.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/host_tensor.h"
#include "tests/mpi/collective_runner.h"
#include "tests/mpi/expected_reduction.h"
#include "tests/mpi/typed_values.h"

namespace horde {
namespace {

using testing::ExpectAllSucceed;
using testing::ExpectedReduction;
using testing::ReductionInput;
using testing::Size;

// One allreduce to run and check.
struct Case {
  Case(DataType dtype, ReduceOp op, TensorShape shape, bool in_place, double prescale = 1.0,
       double postscale = 1.0)
      : dtype(dtype),
        op(op),
        shape(std::move(shape)),
        in_place(in_place),
        prescale(prescale),
        postscale(postscale) {}

  DataType dtype;
  ReduceOp op;
  TensorShape shape;
  bool in_place;
  double prescale;
  double postscale;
  // Where this tensor's values start in the sequence ReductionInput() makes, so that
  // tensors fused together hold different values.
  int64_t first_value = 0;
  std::shared_ptr<HostTensor> input;
  std::shared_ptr<HostTensor> output;

  std::string Name() const {
    return std::string("allreduce.") + DataTypeName(dtype) + "." + ReduceOpName(op) + "." +
           ShapeString(shape) + (in_place ? ".in_place" : ".out") +
           (prescale != 1.0 ? ".scaled" : "");
  }
};

// Fills the case's input with this rank's values, and its output (when separate) with
// a value no result has, so that an output left unwritten shows.
void Prepare(Case* c) {
  const int rank = testing::Rank();
  c->input = testing::FilledTensor(c->dtype, c->shape, [&](int64_t k) {
    return ReductionInput(c->dtype, c->op, rank, c->first_value + k);
  });
  c->output = c->in_place ? c->input
                          : testing::FilledTensor(c->dtype, c->shape, [](int64_t) { return 99; });
}

Request RequestFor(const Case& c) {
  Request r;
  r.op = OpType::kAllreduce;
  r.name = c.Name();
  r.reduce_op = c.op;
  r.prescale = c.prescale;
  r.postscale = c.postscale;
  return r;
}

// The output holds the reduction of every rank's input; a separate input is unchanged.
void ExpectReduced(const Case& c) {
  const int rank = testing::Rank();
  for (int64_t k = 0; k < NumElements(c.shape); ++k) {
    const double expected = testing::RoundedTo(
        c.dtype,
        ExpectedReduction(c.dtype, c.op, Size(), c.first_value + k, c.prescale, c.postscale));
    ASSERT_EQ(testing::LoadElement(c.dtype, c.output->data(), k), expected)
        << c.Name() << " [" << k << "]";
    if (!c.in_place) {
      ASSERT_EQ(testing::LoadElement(c.dtype, c.input->data(), k),
                ReductionInput(c.dtype, c.op, rank, c.first_value + k))
          << c.Name() << " changed its input [" << k << "]";
    }
  }
}

// Every dtype with every op it supports, and (but bool, which cannot be scaled) Sum,
// Average, Min and Max with a prescale and a postscale that truncate integers.
std::vector<Case> EveryDtypeAndOp(testing::Extent extent, bool in_place) {
  std::vector<Case> cases;
  for (DataType dtype : testing::AllDataTypes()) {
    const TensorShape shape = testing::ShapeOf(extent, dtype);
    for (ReduceOp op : testing::AllreduceOpsFor(dtype)) {
      cases.emplace_back(dtype, op, shape, in_place);
      if (dtype != DataType::kBool && op != ReduceOp::kProduct)
        cases.emplace_back(dtype, op, shape, in_place, 2.0, 0.75);
    }
  }
  return cases;
}

void RunAndCheck(std::vector<Case>& cases) {
  std::vector<std::shared_ptr<testing::PendingOp>> ops;
  for (Case& c : cases) {
    Prepare(&c);
    ops.push_back(testing::Submit(RequestFor(c), c.input, c.output));
  }
  ExpectAllSucceed(ops, "allreduce");
  for (const Case& c : cases) ExpectReduced(c);
}

// No two tensors of a batch share dtype, op and scale factors, so none is fused: each
// runs alone, reduced in its own output. Each batch runs twice under the same names, as
// a training step does: the second time from the response cache.
TEST(CollectiveAllreduce, EveryDtypeAndOpAloneIsExact) {
  for (bool in_place : {true, false}) {
    for (testing::Extent extent : testing::AllExtents()) {
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<Case> cases = EveryDtypeAndOp(extent, in_place);
        const RuntimeStats before = testing::StatsNow();
        RunAndCheck(cases);
        EXPECT_EQ(testing::FusedTensorsSince(before), 0) << "extent " << static_cast<int>(extent);
        if (pass == 1) {
          EXPECT_EQ(testing::CacheHitsSince(before), static_cast<int64_t>(cases.size()));
        }
      }
    }
  }
}

// For every dtype, op and scaling, small tensors (an empty one, a scalar, odd counts, a
// matrix, zero-width rows), half of them in place.
std::vector<std::vector<Case>> SmallTensorsOfEveryKind() {
  const std::vector<TensorShape> shapes = {{0}, {}, {13}, {3, 5}, {1}, {7}, {3, 0}};
  std::vector<std::vector<Case>> kinds;
  for (const Case& kind : EveryDtypeAndOp(testing::Extent::kScalar, false)) {
    std::vector<Case> tensors;
    for (size_t i = 0; i < shapes.size(); ++i) {
      Case c = kind;
      c.shape = shapes[i];
      c.in_place = i % 2 == 0;
      c.first_value = 5 * static_cast<int64_t>(i);
      Prepare(&c);
      tensors.push_back(c);
    }
    kinds.push_back(tensors);
  }
  return kinds;
}

// Each kind's small tensors as one group: the group runs as one fused response.
TEST(CollectiveAllreduce, SmallTensorsOfEveryDtypeAndOpFuseAndStayExact) {
  const std::vector<std::vector<Case>> groups = SmallTensorsOfEveryKind();
  const RuntimeStats before = testing::StatsNow();
  std::vector<std::shared_ptr<testing::PendingOp>> ops;
  for (const std::vector<Case>& group : groups) {
    std::vector<Request> requests;
    std::vector<TensorEntry> entries;
    for (const Case& c : group) {
      requests.push_back(RequestFor(c));
      requests.back().name = "";  // members are named after the group
      entries.push_back(testing::EntryOf(c.input, c.output));
    }
    for (auto& op : testing::SubmitGroup(group[0].Name(), requests, entries)) ops.push_back(op);
  }
  ExpectAllSucceed(ops, "fused allreduce");
  EXPECT_EQ(testing::FusedTensorsSince(before), static_cast<int64_t>(ops.size()));
  for (const std::vector<Case>& group : groups) {
    for (const Case& c : group) ExpectReduced(c);
  }
}

// The same tensors submitted one by one, as a training step's gradients are, twice
// under the same names: whatever the rounds fuse, first negotiated and then from the
// response cache, every result is exact.
TEST(CollectiveAllreduce, SmallTensorsSubmittedOneByOneStayExactFromTheCache) {
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Case> cases;
    for (const std::vector<Case>& tensors : SmallTensorsOfEveryKind())
      cases.insert(cases.end(), tensors.begin(), tensors.end());
    const RuntimeStats before = testing::StatsNow();
    RunAndCheck(cases);
    if (pass == 1) {
      EXPECT_EQ(testing::CacheHitsSince(before), static_cast<int64_t>(cases.size()));
    }
  }
}

// Eight tensors of 1000 bytes fill the 4 KiB buffer twice, and a tensor larger than the
// buffer runs alone: three collectives for one group.
TEST(CollectiveAllreduce, AGroupLargerThanTheFusionBufferIsSplitAcrossResponses) {
  std::vector<Case> cases;
  for (int i = 0; i < 8; ++i) {
    cases.emplace_back(DataType::kInt32, ReduceOp::kSum, TensorShape{250}, i < 4);
    cases.back().first_value = 5 * i;
  }
  cases.emplace_back(DataType::kInt32, ReduceOp::kSum,
                     TensorShape{testing::LargerThanFusionBuffer(DataType::kInt32)}, false);
  std::vector<Request> requests;
  std::vector<TensorEntry> entries;
  for (Case& c : cases) {
    Prepare(&c);
    requests.push_back(RequestFor(c));
    requests.back().name = "";
    entries.push_back(testing::EntryOf(c.input, c.output));
  }
  const RuntimeStats before = testing::StatsNow();
  ExpectAllSucceed(testing::SubmitGroup("allreduce.split", requests, entries), "split group");
  EXPECT_EQ(testing::FusedResponsesSince(before), 2);
  EXPECT_EQ(testing::FusedTensorsSince(before), 8);
  for (const Case& c : cases) ExpectReduced(c);
}

// int64 values beyond float64's 53-bit mantissa: a reduction or an Average division
// that went through floating point would lose the low bits.
TEST(CollectiveAllreduce, Int64StaysExactBeyondFloatPrecision) {
  const int64_t base = (int64_t{1} << 60) + 1;
  const int n = Size();
  struct Expectation {
    ReduceOp op;
    int64_t result;
  };
  int64_t sum = 0;
  for (int r = 0; r < n; ++r) sum += base + r;
  const std::vector<Expectation> expectations = {{ReduceOp::kSum, sum},
                                                 {ReduceOp::kMax, base + n - 1},
                                                 {ReduceOp::kMin, base},
                                                 {ReduceOp::kAverage, sum / n}};
  std::vector<std::shared_ptr<HostTensor>> tensors;
  std::vector<std::shared_ptr<testing::PendingOp>> ops;
  for (const Expectation& e : expectations) {
    // Sum of 4 such values is still below 2^63.
    tensors.push_back(std::make_shared<HostTensor>(DataType::kInt64, TensorShape{3}));
    for (int k = 0; k < 3; ++k) tensors.back()->as<int64_t>()[k] = base + testing::Rank();
    Request r;
    r.op = OpType::kAllreduce;
    r.name = std::string("allreduce.int64.exact.") + ReduceOpName(e.op);
    r.reduce_op = e.op;
    ops.push_back(testing::Submit(r, tensors.back(), tensors.back()));
  }
  ExpectAllSucceed(ops, "int64 allreduce");
  for (size_t i = 0; i < expectations.size(); ++i) {
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(tensors[i]->as<int64_t>()[k], expectations[i].result)
          << ReduceOpName(expectations[i].op);
    }
  }
}

// Bool has no mean and cannot be scaled: refused on the submitting rank, nothing queued.
TEST(CollectiveAllreduce, BoolAverageAndScalingAreRefusedAtSubmit) {
  Case average(DataType::kBool, ReduceOp::kAverage, TensorShape{4}, true);
  Case scaled(DataType::kBool, ReduceOp::kSum, TensorShape{4}, true, 2.0);
  for (Case* c : {&average, &scaled}) Prepare(c);
  Status s = testing::Submit(RequestFor(average), average.input, average.output)->Wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Average is not defined for bool tensors"), std::string::npos)
      << s.message();
  s = testing::Submit(RequestFor(scaled), scaled.input, scaled.output)->Wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bool tensors cannot be scaled"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace horde

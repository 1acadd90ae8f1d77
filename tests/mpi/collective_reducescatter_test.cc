// MpiReducescatter over real MPI processes, without torch: run under mpirun with 1, 2
// and 4 ranks. Every dtype with Sum and Average (bool: Sum), scaled and not; first
// dimensions of 0, 1, 13 (not divisible by the ranks: some get a row more, some none)
// and larger than the fusion buffer; alone and fused. Each rank checks its rows of the
// exact reduction.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/host_tensor.h"
#include "core/row_split.h"
#include "tests/mpi/collective_runner.h"
#include "tests/mpi/expected_reduction.h"
#include "tests/mpi/typed_values.h"

namespace horde {
namespace {

using testing::ExpectedReduction;
using testing::ReductionInput;
using testing::Size;

// One reducescatter to run and check.
struct Case {
  Case(DataType dtype, ReduceOp op, TensorShape shape, double prescale = 1.0,
       double postscale = 1.0)
      : dtype(dtype), op(op), shape(std::move(shape)), prescale(prescale), postscale(postscale) {}

  DataType dtype;
  ReduceOp op;
  TensorShape shape;
  double prescale;
  double postscale;
  // Where this tensor's values start in the sequence ReductionInput() makes, so that
  // tensors fused together hold different values.
  int64_t first_value = 0;
  std::shared_ptr<HostTensor> input;
  std::shared_ptr<testing::PendingOp> op_done;

  std::string Name() const {
    return std::string("reducescatter.") + DataTypeName(dtype) + "." + ReduceOpName(op) + "." +
           ShapeString(shape) + (prescale != 1.0 ? ".scaled" : "");
  }
};

Request ReducescatterRequest(const Case& c) {
  Request r;
  r.op = OpType::kReducescatter;
  r.name = c.Name();
  r.reduce_op = c.op;
  r.prescale = c.prescale;
  r.postscale = c.postscale;
  return r;
}

void Prepare(Case* c) {
  const int rank = testing::Rank();
  c->input = testing::FilledTensor(c->dtype, c->shape, [&](int64_t k) {
    return ReductionInput(c->dtype, c->op, rank, c->first_value + k);
  });
}

// This rank's output is its rows (core/row_split.h) of the reduction; its input is
// unchanged.
void ExpectScattered(const Case& c) {
  const int rank = testing::Rank();
  const std::vector<int64_t> rows = ReducescatterRows(c.shape[0], Size());
  int64_t first_row = 0;
  for (int r = 0; r < rank; ++r) first_row += rows[r];
  const int64_t row_elements = NumElements(RowShape(c.shape));
  TensorShape expected_shape = c.shape;
  expected_shape[0] = rows[rank];
  ASSERT_NE(c.op_done->output, nullptr) << c.Name();
  ASSERT_EQ(c.op_done->output->shape(), expected_shape) << c.Name();
  for (int64_t k = 0; k < rows[rank] * row_elements; ++k) {
    const int64_t index = first_row * row_elements + k;
    const double expected = testing::RoundedTo(
        c.dtype,
        ExpectedReduction(c.dtype, c.op, Size(), c.first_value + index, c.prescale, c.postscale));
    ASSERT_EQ(testing::LoadElement(c.dtype, c.op_done->output->data(), k), expected)
        << c.Name() << " [" << k << "]";
  }
  for (int64_t k = 0; k < NumElements(c.shape); ++k) {
    ASSERT_EQ(testing::LoadElement(c.dtype, c.input->data(), k),
              ReductionInput(c.dtype, c.op, rank, c.first_value + k))
        << c.Name() << " changed its input [" << k << "]";
  }
}

// The first dimensions tested, for rows of three elements of `dtype`.
std::vector<TensorShape> ShapesFor(DataType dtype) {
  const int64_t row_bytes = 3 * DataTypeSize(dtype);
  // More rows than the buffer holds, one more than a multiple of the ranks.
  const int64_t larger = (testing::kTestFusionThresholdBytes / row_bytes / Size() + 1) * Size() + 1;
  return {{0, 3}, {1}, {13}, {13, 3}, {13, 0}, {larger, 3}};
}

// Every dtype with each op it supports, unscaled and (but bool) scaled.
std::vector<Case> EveryDtypeAndOp(size_t shape_index) {
  std::vector<Case> cases;
  for (DataType dtype : testing::AllDataTypes()) {
    const TensorShape shape = ShapesFor(dtype)[shape_index];
    cases.emplace_back(dtype, ReduceOp::kSum, shape);
    if (dtype == DataType::kBool) continue;  // no mean, no scaling
    cases.emplace_back(dtype, ReduceOp::kAverage, shape);
    cases.emplace_back(dtype, ReduceOp::kSum, shape, 2.0, 0.75);
    cases.emplace_back(dtype, ReduceOp::kAverage, shape, 2.0, 0.75);
  }
  return cases;
}

// No two of a batch share dtype, op and scaling, so none is fused. Each batch runs
// twice under the same names: the second time from the response cache.
TEST(CollectiveReducescatter, EveryDtypeAndOpAlone) {
  const size_t shapes = ShapesFor(DataType::kUInt8).size();
  for (size_t shape_index = 0; shape_index < shapes; ++shape_index) {
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<Case> cases = EveryDtypeAndOp(shape_index);
      std::vector<std::shared_ptr<testing::PendingOp>> ops;
      const RuntimeStats before = testing::StatsNow();
      for (Case& c : cases) {
        Prepare(&c);
        c.op_done = testing::Submit(ReducescatterRequest(c), c.input, nullptr);
        ops.push_back(c.op_done);
      }
      testing::ExpectAllSucceed(ops, "reducescatter");
      EXPECT_EQ(testing::FusedTensorsSince(before), 0);
      if (pass == 1) {
        EXPECT_EQ(testing::CacheHitsSince(before), static_cast<int64_t>(cases.size()));
      }
      for (const Case& c : cases) ExpectScattered(c);
    }
  }
}

// Each dtype, op and scaling as one group of every shape: the small ones fuse into one
// MPI_Ireduce_scatter, the one larger than the fusion buffer runs alone.
TEST(CollectiveReducescatter, EveryDtypeAndOpFused) {
  const size_t shapes = ShapesFor(DataType::kUInt8).size();
  std::vector<std::vector<Case>> groups;
  for (const Case& kind : EveryDtypeAndOp(0)) {
    std::vector<Case> group;
    for (size_t s = 0; s < shapes; ++s) {
      group.push_back(kind);
      group.back().shape = ShapesFor(kind.dtype)[s];
      group.back().first_value = 5 * static_cast<int64_t>(s);
      Prepare(&group.back());
    }
    groups.push_back(std::move(group));
  }
  const RuntimeStats before = testing::StatsNow();
  std::vector<std::shared_ptr<testing::PendingOp>> ops;
  for (std::vector<Case>& group : groups) {
    std::vector<Request> requests;
    std::vector<TensorEntry> entries;
    for (const Case& c : group) {
      requests.push_back(ReducescatterRequest(c));
      requests.back().name = "";
      entries.push_back(testing::EntryOf(c.input, nullptr));
    }
    const auto submitted = testing::SubmitGroup(group[0].Name(), requests, entries);
    for (size_t i = 0; i < group.size(); ++i) group[i].op_done = submitted[i];
    ops.insert(ops.end(), submitted.begin(), submitted.end());
  }
  testing::ExpectAllSucceed(ops, "fused reducescatter");
  EXPECT_EQ(testing::FusedTensorsSince(before), static_cast<int64_t>(groups.size() * (shapes - 1)));
  for (const auto& group : groups) {
    for (const Case& c : group) ExpectScattered(c);
  }
}

TEST(CollectiveReducescatter, MinMaxAndProductAreRefusedAtSubmit) {
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    Case c(DataType::kFloat32, op, {4});
    Prepare(&c);
    const Status s = testing::Submit(ReducescatterRequest(c), c.input, nullptr)->Wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << ReduceOpName(op);
    EXPECT_NE(s.message().find("reducescatter supports Sum and Average"), std::string::npos)
        << s.message();
  }
}

}  // namespace
}  // namespace horde

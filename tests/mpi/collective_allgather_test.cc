// MpiAllgather over real MPI processes, without torch: run under mpirun with 1, 2 and 4
// ranks. Every dtype; first dimensions that differ per rank (zero on some), all empty,
// zero-width rows, scalars, and outputs larger than the fusion buffer; alone and fused,
// and a second time from the response cache.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/host_tensor.h"
#include "tests/mpi/collective_runner.h"
#include "tests/mpi/typed_values.h"

namespace horde {
namespace {

using testing::LoadElement;
using testing::Size;

// Rows each rank contributes, by rank.
using RowsByRank = std::function<int64_t(int rank)>;

// One allgather to run and check: `rows` of `row_shape` on each rank, or a scalar
// (which counts as one row).
struct Case {
  Case(std::string label, DataType dtype, TensorShape row_shape, RowsByRank rows)
      : label(std::move(label)),
        dtype(dtype),
        row_shape(std::move(row_shape)),
        rows(std::move(rows)) {}

  static Case Scalar(std::string label, DataType dtype) {
    Case c(std::move(label), dtype, {}, [](int) { return 1; });
    c.scalar = true;
    return c;
  }

  std::string label;
  DataType dtype;
  TensorShape row_shape;
  RowsByRank rows;
  bool scalar = false;
  std::shared_ptr<HostTensor> input;
  std::shared_ptr<testing::PendingOp> op;

  std::string Name() const { return "allgather." + label + "." + DataTypeName(dtype); }
  TensorShape ShapeOn(int rank) const {
    if (scalar) return {};
    TensorShape shape = row_shape;
    shape.insert(shape.begin(), rows(rank));
    return shape;
  }
  // Element k of `rank`'s input.
  double ValueOf(int rank, int64_t k) const {
    return testing::MovedValue(dtype, 1000 * rank + testing::Salt(label) + k);
  }
};

Request AllgatherRequest(const Case& c) {
  Request r;
  r.op = OpType::kAllgather;
  r.name = c.Name();
  return r;
}

void Prepare(Case* c) {
  const int rank = testing::Rank();
  c->input = testing::FilledTensor(c->dtype, c->ShapeOn(rank),
                                   [&](int64_t k) { return c->ValueOf(rank, k); });
}

// The output is every rank's rows in rank order; the input is unchanged.
void ExpectGathered(const Case& c) {
  ASSERT_NE(c.op->output, nullptr) << c.Name();
  TensorShape expected_shape = c.row_shape;
  int64_t rows = 0;
  for (int r = 0; r < Size(); ++r) rows += c.scalar ? 1 : c.rows(r);
  expected_shape.insert(expected_shape.begin(), rows);
  ASSERT_EQ(c.op->output->shape(), expected_shape) << c.Name();
  const void* gathered = c.op->output->data();
  int64_t at = 0;
  for (int r = 0; r < Size(); ++r) {
    const int64_t elements = NumElements(c.ShapeOn(r));
    for (int64_t k = 0; k < elements; ++k, ++at) {
      ASSERT_EQ(LoadElement(c.dtype, gathered, at), c.ValueOf(r, k))
          << c.Name() << ": rank " << r << " [" << k << "]";
    }
  }
  const int64_t own_elements = NumElements(c.ShapeOn(testing::Rank()));
  for (int64_t k = 0; k < own_elements; ++k)
    ASSERT_EQ(LoadElement(c.dtype, c.input->data(), k), c.ValueOf(testing::Rank(), k)) << c.Name();
}

// The kinds of allgather of one dtype; `larger_rows` makes the output larger than the
// fusion buffer.
std::vector<Case> KindsOf(DataType dtype) {
  const int64_t row_bytes = 3 * DataTypeSize(dtype);
  const int64_t larger_rows = testing::kTestFusionThresholdBytes / row_bytes / Size() + 5;
  return {
      Case("uneven", dtype, {}, [](int r) { return r % 3; }),
      Case("uneven.rows", dtype, {3}, [](int r) { return (r + 2) % 3; }),
      Case("empty", dtype, {3}, [](int) { return 0; }),
      Case("zero.width", dtype, {0}, [](int r) { return r + 1; }),
      Case::Scalar("scalar", dtype),
      Case("odd", dtype, {}, [](int r) { return 13 + r; }),
      Case("large", dtype, {3}, [larger_rows](int r) { return larger_rows + r; }),
  };
}

// One allgather per dtype and kind at a time, so no two share a dtype: none is fused.
// Each batch runs twice under the same names: the second time from the response cache.
TEST(CollectiveAllgather, EveryDtypeAndKindAlone) {
  const size_t kinds = KindsOf(DataType::kUInt8).size();
  for (size_t kind = 0; kind < kinds; ++kind) {
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<Case> cases;
      std::vector<std::shared_ptr<testing::PendingOp>> ops;
      for (DataType dtype : testing::AllDataTypes()) cases.push_back(KindsOf(dtype)[kind]);
      const RuntimeStats before = testing::StatsNow();
      for (Case& c : cases) {
        Prepare(&c);
        c.op = testing::Submit(AllgatherRequest(c), c.input, nullptr);
        ops.push_back(c.op);
      }
      testing::ExpectAllSucceed(ops, "allgather");
      EXPECT_EQ(testing::FusedTensorsSince(before), 0);
      if (pass == 1) {
        EXPECT_EQ(testing::CacheHitsSince(before), static_cast<int64_t>(cases.size()));
      }
      for (const Case& c : cases) ExpectGathered(c);
    }
  }
}

// Each dtype's small kinds as one group: one MPI_Allgatherv carries every rank's rows of
// every tensor; the large one (over the fusion buffer) runs alone.
TEST(CollectiveAllgather, EveryDtypeFusedWithDifferentRowsPerRank) {
  std::vector<std::vector<Case>> groups;
  std::vector<std::shared_ptr<testing::PendingOp>> ops;
  const RuntimeStats before = testing::StatsNow();
  int64_t fusable = 0;
  for (DataType dtype : testing::AllDataTypes()) {
    std::vector<Case> group = KindsOf(dtype);
    std::vector<Request> requests;
    std::vector<TensorEntry> entries;
    for (Case& c : group) {
      Prepare(&c);
      requests.push_back(AllgatherRequest(c));
      requests.back().name = "";
      entries.push_back(testing::EntryOf(c.input, nullptr));
    }
    fusable += static_cast<int64_t>(group.size()) - 1;
    const auto submitted = testing::SubmitGroup(
        "allgather.fused." + std::string(DataTypeName(dtype)), requests, entries);
    for (size_t i = 0; i < group.size(); ++i) group[i].op = submitted[i];
    ops.insert(ops.end(), submitted.begin(), submitted.end());
    groups.push_back(std::move(group));
  }
  testing::ExpectAllSucceed(ops, "fused allgather");
  EXPECT_EQ(testing::FusedTensorsSince(before), fusable);
  for (const auto& group : groups) {
    for (const Case& c : group) ExpectGathered(c);
  }
}

}  // namespace
}  // namespace horde

// MpiAlltoall over real MPI processes, without torch: run under mpirun with 1, 2 and 4
// ranks (mpi_alltoall_test.cc covers failures). Every dtype; uneven splits (zero for
// some pairs), even ones left to the op, nothing at all, zero-width rows, one row, and
// more than the fusion buffer; the rows received and the received splits are checked
// exactly.
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

using testing::Size;

// Rows rank `from` sends to rank `to`.
using Splits = std::function<int64_t(int from, int to)>;

// One alltoall to run and check.
struct Case {
  Case(std::string label, DataType dtype, TensorShape row_shape, Splits splits)
      : label(std::move(label)),
        dtype(dtype),
        row_shape(std::move(row_shape)),
        splits(std::move(splits)) {}

  // `rows` to every rank, passing no splits: the op splits the rows evenly.
  static Case Even(std::string label, DataType dtype, TensorShape row_shape, int64_t rows) {
    Case c(std::move(label), dtype, std::move(row_shape), [rows](int, int) { return rows; });
    c.even = true;
    return c;
  }

  std::string label;
  DataType dtype;
  TensorShape row_shape;
  Splits splits;
  bool even = false;
  std::shared_ptr<HostTensor> input;
  std::shared_ptr<HostTensor> received_splits;
  std::shared_ptr<testing::PendingOp> op;

  std::string Name() const { return "alltoall." + label + "." + DataTypeName(dtype); }
  int64_t RowsOf(int rank) const {
    int64_t rows = 0;
    for (int to = 0; to < Size(); ++to) rows += splits(rank, to);
    return rows;
  }
  // Element k of `rank`'s input: its rows go to rank 0 first, then to rank 1, ...
  double ValueOf(int rank, int64_t k) const {
    return testing::MovedValue(dtype, 1000 * rank + testing::Salt(label) + k);
  }
};

TensorEntry EntryFor(Case* c) {
  const int rank = testing::Rank();
  TensorShape shape = c->row_shape;
  shape.insert(shape.begin(), c->RowsOf(rank));
  c->input = testing::FilledTensor(c->dtype, shape, [&](int64_t k) { return c->ValueOf(rank, k); });
  c->received_splits = std::make_shared<HostTensor>(DataType::kInt32, TensorShape{Size()});
  TensorEntry entry = testing::EntryOf(c->input, nullptr);
  for (int to = 0; to < Size() && !c->even; ++to) entry.splits.push_back(c->splits(rank, to));
  entry.received_splits = c->received_splits;
  return entry;
}

Request AlltoallRequest(const Case& c) {
  Request r;
  r.op = OpType::kAlltoall;
  r.name = c.Name();
  return r;
}

// The output holds, in sender order, the rows each rank sent here.
void ExpectExchanged(const Case& c) {
  const int me = testing::Rank();
  const int64_t row_elements = NumElements(c.row_shape);
  ASSERT_NE(c.op->output, nullptr) << c.Name();
  TensorShape expected_shape = c.row_shape;
  int64_t received_rows = 0;
  for (int from = 0; from < Size(); ++from) received_rows += c.splits(from, me);
  expected_shape.insert(expected_shape.begin(), received_rows);
  ASSERT_EQ(c.op->output->shape(), expected_shape) << c.Name();
  int64_t at = 0;
  for (int from = 0; from < Size(); ++from) {
    EXPECT_EQ(c.received_splits->as<int32_t>()[from], c.splits(from, me)) << c.Name();
    int64_t first_row = 0;  // of the sender's rows, the first it sent here
    for (int to = 0; to < me; ++to) first_row += c.splits(from, to);
    for (int64_t k = 0; k < c.splits(from, me) * row_elements; ++k, ++at) {
      ASSERT_EQ(testing::LoadElement(c.dtype, c.op->output->data(), at),
                c.ValueOf(from, first_row * row_elements + k))
          << c.Name() << ": from rank " << from << " [" << k << "]";
    }
  }
}

std::vector<Case> KindsOf(DataType dtype) {
  const int64_t row_bytes = 2 * DataTypeSize(dtype);
  const int64_t larger = testing::kTestFusionThresholdBytes / row_bytes / Size() + 3;
  return {
      Case("uneven", dtype, {2}, [](int from, int to) { return (from + 2 * to) % 3; }),
      Case("uneven.flat", dtype, {}, [](int from, int to) { return (2 * from + to + 1) % 4; }),
      Case::Even("even", dtype, {3}, 2),
      Case("empty", dtype, {2}, [](int, int) { return 0; }),
      Case("zero.width", dtype, {0}, [](int from, int to) { return (from + to) % 2; }),
      Case("one.row", dtype, {},
           [](int from, int to) { return to == (from + 1) % Size() ? 1 : 0; }),
      Case("large", dtype, {2}, [larger](int from, int to) { return larger + (from + to) % 2; }),
  };
}

void SubmitAll(std::vector<Case>& cases, std::vector<std::shared_ptr<testing::PendingOp>>* ops) {
  for (Case& c : cases) {
    c.op = testing::Submit(AlltoallRequest(c), EntryFor(&c));
    ops->push_back(c.op);
  }
}

// Every dtype and kind in flight together, twice under the same names: the second time
// from the response cache.
TEST(CollectiveAlltoall, EveryDtypeAndSplitKind) {
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Case> cases;
    for (DataType dtype : testing::AllDataTypes()) {
      for (Case& c : KindsOf(dtype)) cases.push_back(std::move(c));
    }
    std::vector<std::shared_ptr<testing::PendingOp>> ops;
    const RuntimeStats before = testing::StatsNow();
    SubmitAll(cases, &ops);
    testing::ExpectAllSucceed(ops, "alltoall");
    if (pass == 1) {
      EXPECT_EQ(testing::CacheHitsSince(before), static_cast<int64_t>(cases.size()));
    }
    for (const Case& c : cases) ExpectExchanged(c);
  }
}

// A group's alltoalls are released together and run one exchange each.
TEST(CollectiveAlltoall, AGroupOfEveryKindRunsEachExchange) {
  std::vector<Case> cases = KindsOf(DataType::kInt16);
  std::vector<Request> requests;
  std::vector<TensorEntry> entries;
  for (Case& c : cases) {
    entries.push_back(EntryFor(&c));
    requests.push_back(AlltoallRequest(c));
    requests.back().name = "";
  }
  const auto ops = testing::SubmitGroup("alltoall.group", requests, entries);
  for (size_t i = 0; i < cases.size(); ++i) cases[i].op = ops[i];
  testing::ExpectAllSucceed(ops, "grouped alltoall");
  for (const Case& c : cases) ExpectExchanged(c);
}

}  // namespace
}  // namespace horde

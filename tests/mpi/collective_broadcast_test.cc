// MpiBroadcast over real MPI processes, without torch: run under mpirun with 1, 2 and 4
// ranks. From every root, every dtype, tensors of 0, 1, 13 elements and larger than the
// fusion buffer (and a matrix), in place and into another tensor.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/host_tensor.h"
#include "tests/mpi/collective_runner.h"
#include "tests/mpi/typed_values.h"

namespace horde {
namespace {

using testing::LoadElement;
using testing::MovedValue;

// One broadcast to run and check.
struct Case {
  Case(int root, DataType dtype, TensorShape shape, bool in_place)
      : root(root), dtype(dtype), shape(std::move(shape)), in_place(in_place) {}

  int root;
  DataType dtype;
  TensorShape shape;
  bool in_place;
  std::shared_ptr<HostTensor> input;
  std::shared_ptr<HostTensor> output;

  std::string Name() const {
    return "broadcast.root" + std::to_string(root) + "." + DataTypeName(dtype) + "." +
           ShapeString(shape) + (in_place ? ".in_place" : ".out");
  }
  // What `rank` holds in element k before the broadcast: different on every rank.
  double ValueOf(int rank, int64_t k) const {
    return MovedValue(dtype, 1000 * rank + 17 * static_cast<int>(dtype) + k);
  }
};

void Prepare(Case* c) {
  const int rank = testing::Rank();
  c->input = testing::FilledTensor(c->dtype, c->shape,
                                   [&](int64_t k) { return c->ValueOf(rank, k); });
  // A separate output starts as what no root sends, so an output left unwritten shows.
  c->output = c->in_place ? c->input : testing::FilledTensor(c->dtype, c->shape, [&](int64_t k) {
    return c->ValueOf(testing::Size() + 1, k);
  });
}

// Every rank's output holds the root's values; a separate input is left as it was.
void ExpectBroadcast(const Case& c) {
  const int rank = testing::Rank();
  for (int64_t k = 0; k < NumElements(c.shape); ++k) {
    ASSERT_EQ(LoadElement(c.dtype, c.output->data(), k), c.ValueOf(c.root, k))
        << c.Name() << " [" << k << "]";
    if (!c.in_place) {
      ASSERT_EQ(LoadElement(c.dtype, c.input->data(), k), c.ValueOf(rank, k))
          << c.Name() << " changed its input [" << k << "]";
    }
  }
}

void RunAndCheck(std::vector<Case>& cases) {
  std::vector<std::shared_ptr<testing::PendingOp>> ops;
  for (Case& c : cases) {
    Prepare(&c);
    Request r;
    r.op = OpType::kBroadcast;
    r.name = c.Name();
    r.root = c.root;
    ops.push_back(testing::Submit(r, c.input, c.output));
  }
  testing::ExpectAllSucceed(ops, "broadcast");
  for (const Case& c : cases) ExpectBroadcast(c);
}

std::vector<Case> EveryDtypeAndShapeFrom(int root) {
  std::vector<Case> cases;
  for (DataType dtype : testing::AllDataTypes()) {
    for (bool in_place : {true, false}) {
      for (testing::Extent extent : testing::AllExtents())
        cases.emplace_back(root, dtype, testing::ShapeOf(extent, dtype), in_place);
      cases.emplace_back(root, dtype, TensorShape{3, 5, 2}, in_place);
      cases.emplace_back(root, dtype, TensorShape{4, 0}, in_place);
    }
  }
  return cases;
}

// All of one root's broadcasts are in flight together; broadcasts never fuse, so each
// is its own MPI_Bcast. They run twice under the same names: the second time from the
// response cache.
TEST(CollectiveBroadcast, EveryDtypeAndSizeFromEveryRoot) {
  for (int root = 0; root < testing::Size(); ++root) {
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<Case> cases = EveryDtypeAndShapeFrom(root);
      const RuntimeStats before = testing::StatsNow();
      RunAndCheck(cases);
      if (pass == 1) {
        EXPECT_EQ(testing::CacheHitsSince(before), static_cast<int64_t>(cases.size()));
      }
    }
  }
}

TEST(CollectiveBroadcast, ARootOutOfRangeIsRefusedAtSubmit) {
  auto t = std::make_shared<HostTensor>(DataType::kFloat32, TensorShape{2});
  Request r;
  r.op = OpType::kBroadcast;
  r.name = "broadcast.bad.root";
  r.root = testing::Size();
  const Status s = testing::Submit(r, t, t)->Wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("root rank " + std::to_string(testing::Size()) + " is out of range"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace horde

// MpiAdasumAllreduce over real MPI processes, without torch: run under mpirun with 1, 2
// and 4 ranks (mpi_adasum_test.cc compares random inputs with a reference). Here the
// inputs make Adasum's result exact, so every floating dtype is compared exactly:
// vectors orthogonal across ranks add up, identical ones stay as they are. Tensors of
// 0, 1, 13 elements and larger than the fusion buffer, in place and not, scaled and
// not, alone and fused (each tensor of a fused buffer with its own coefficients).
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

enum class Pattern {
  kOrthogonal,  // rank r holds the elements k with k % size == r, the others zeros
  kIdentical,   // every rank holds the same values
};

// One Adasum allreduce to run and check.
struct Case {
  Case(DataType dtype, TensorShape shape, Pattern pattern, bool in_place, double prescale = 1.0,
       double postscale = 1.0)
      : dtype(dtype),
        shape(std::move(shape)),
        pattern(pattern),
        in_place(in_place),
        prescale(prescale),
        postscale(postscale) {}

  DataType dtype;
  TensorShape shape;
  Pattern pattern;
  bool in_place;
  double prescale;
  double postscale;
  // Shifts the values, so that tensors fused together hold different ones.
  int64_t first_value = 0;
  std::shared_ptr<HostTensor> input;
  std::shared_ptr<HostTensor> output;

  std::string Name() const {
    return std::string("adasum.") + DataTypeName(dtype) + "." + ShapeString(shape) +
           (pattern == Pattern::kOrthogonal ? ".orthogonal" : ".identical") +
           (in_place ? ".in_place" : ".out") + (prescale != 1.0 ? ".scaled" : "");
  }
  // The value element k has on the rank that holds it: nonzero, exact in every dtype.
  double Value(int64_t k) const {
    const int64_t v = first_value + k;
    return (v % 3 == 1 ? -1.0 : 1.0) * (v % 7 + 1);
  }
  double InputOf(int rank, int64_t k) const {
    const bool held = pattern == Pattern::kIdentical || k % testing::Size() == rank;
    return held ? Value(k) : 0.0;
  }
};

void Prepare(Case* c) {
  const int rank = testing::Rank();
  c->input = testing::FilledTensor(c->dtype, c->shape,
                                   [&](int64_t k) { return c->InputOf(rank, k); });
  c->output = c->in_place ? c->input
                          : testing::FilledTensor(c->dtype, c->shape, [](int64_t) { return 99; });
}

Request AdasumRequest(const Case& c) {
  Request r;
  r.op = OpType::kAllreduce;
  r.name = c.Name();
  r.reduce_op = ReduceOp::kAdasum;
  r.prescale = c.prescale;
  r.postscale = c.postscale;
  return r;
}

// Orthogonal vectors add up (each element from the one rank that holds it) and
// identical ones average to themselves, so either way every element is Value(k) times
// the two scale factors; a separate input is unchanged.
void ExpectCombined(const Case& c) {
  for (int64_t k = 0; k < NumElements(c.shape); ++k) {
    ASSERT_EQ(LoadElement(c.dtype, c.output->data(), k), c.Value(k) * c.prescale * c.postscale)
        << c.Name() << " [" << k << "]";
    if (!c.in_place) {
      ASSERT_EQ(LoadElement(c.dtype, c.input->data(), k), c.InputOf(testing::Rank(), k))
          << c.Name() << " changed its input [" << k << "]";
    }
  }
}

// One batch per size, pattern and placement, holding every floating dtype unscaled and
// scaled: no two share dtype and scaling, so none is fused.
TEST(CollectiveAdasum, EveryFloatingDtypeAndSizeAlone) {
  for (testing::Extent extent : testing::AllExtents()) {
    for (Pattern pattern : {Pattern::kOrthogonal, Pattern::kIdentical}) {
      for (bool in_place : {true, false}) {
        std::vector<Case> cases;
        for (DataType dtype : testing::FloatingDataTypes()) {
          cases.emplace_back(dtype, testing::ShapeOf(extent, dtype), pattern, in_place);
          cases.emplace_back(dtype, testing::ShapeOf(extent, dtype), pattern, in_place, 2.0, 0.5);
        }
        std::vector<std::shared_ptr<testing::PendingOp>> ops;
        const RuntimeStats before = testing::StatsNow();
        for (Case& c : cases) {
          Prepare(&c);
          ops.push_back(testing::Submit(AdasumRequest(c), c.input, c.output));
        }
        testing::ExpectAllSucceed(ops, "adasum");
        EXPECT_EQ(testing::FusedTensorsSince(before), 0);
        for (const Case& c : cases) ExpectCombined(c);
      }
    }
  }
}

// A group per dtype whose tensors alternate between the patterns: coefficients computed
// over the whole buffer instead of per tensor would mix them up.
TEST(CollectiveAdasum, FusedTensorsOfEveryFloatingDtypeKeepTheirOwnCoefficients) {
  const std::vector<TensorShape> shapes = {{13}, {0}, {}, {3, 5}, {7}, {1}};
  std::vector<std::vector<Case>> groups;
  std::vector<std::shared_ptr<testing::PendingOp>> ops;
  const RuntimeStats before = testing::StatsNow();
  for (DataType dtype : testing::FloatingDataTypes()) {
    std::vector<Case> group;
    std::vector<Request> requests;
    std::vector<TensorEntry> entries;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Pattern pattern = i % 2 == 0 ? Pattern::kOrthogonal : Pattern::kIdentical;
      group.emplace_back(dtype, shapes[i], pattern, i % 3 != 0, 2.0, 0.5);
      group.back().first_value = 5 * static_cast<int64_t>(i);
      Prepare(&group.back());
      requests.push_back(AdasumRequest(group.back()));
      requests.back().name = "";
      entries.push_back(testing::EntryOf(group.back().input, group.back().output));
    }
    const auto submitted = testing::SubmitGroup("adasum.fused." + std::string(DataTypeName(dtype)),
                                                requests, entries);
    ops.insert(ops.end(), submitted.begin(), submitted.end());
    groups.push_back(std::move(group));
  }
  testing::ExpectAllSucceed(ops, "fused adasum");
  EXPECT_EQ(testing::FusedTensorsSince(before), static_cast<int64_t>(ops.size()));
  for (const auto& group : groups) {
    for (const Case& c : group) ExpectCombined(c);
  }
}

}  // namespace
}  // namespace horde

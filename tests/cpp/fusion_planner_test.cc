#include "core/fusion_planner.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace horde {
namespace {

PlannedResponse Allreduce(const std::string& name, int64_t bytes) {
  PlannedResponse p;
  p.response.op = OpType::kAllreduce;
  p.response.names = {name};
  p.bytes = bytes;
  return p;
}

std::vector<std::vector<std::string>> NamesOf(const std::vector<Response>& responses) {
  std::vector<std::vector<std::string>> names;
  for (const auto& r : responses) names.push_back(r.names);
  return names;
}

using Groups = std::vector<std::vector<std::string>>;

TEST(FusionOffsets, AlignsEveryTensorTo64Bytes) {
  EXPECT_EQ(AlignToFusion(0), 0);
  EXPECT_EQ(AlignToFusion(1), 64);
  EXPECT_EQ(AlignToFusion(64), 64);
  EXPECT_EQ(AlignToFusion(65), 128);

  int64_t total = -1;
  EXPECT_EQ(FusionOffsets({10, 64, 1, 0, 100}, &total),
            (std::vector<int64_t>{0, 64, 128, 192, 192}));
  EXPECT_EQ(total, 292);  // the last tensor is not padded
  for (int64_t offset : FusionOffsets({3, 5, 7, 129}, &total)) {
    EXPECT_EQ(offset % kFusionAlignment, 0);
  }

  EXPECT_TRUE(FusionOffsets({}, &total).empty());
  EXPECT_EQ(total, 0);
}

TEST(FusionPlanner, FusesWhenThePackExactlyFitsButNotOneByteOver) {
  // 10 bytes, padded to 64, then 36 bytes: exactly 100.
  FusionPlanner planner(100);
  EXPECT_EQ(NamesOf(planner.Plan({Allreduce("a", 10), Allreduce("b", 36)})), (Groups{{"a", "b"}}));
  EXPECT_EQ(NamesOf(planner.Plan({Allreduce("a", 10), Allreduce("b", 37)})),
            (Groups{{"a"}, {"b"}}));
  // A single tensor of exactly the threshold fits, but leaves no room for another.
  EXPECT_EQ(NamesOf(planner.Plan({Allreduce("a", 100), Allreduce("b", 1)})),
            (Groups{{"a"}, {"b"}}));
}

TEST(FusionPlanner, PlannedPacksFitTheirFusionOffsetsAndLoseNothing) {
  // What the planner admits must be what an executor can lay out within the threshold.
  const std::vector<int64_t> sizes = {40, 24, 64, 1, 63, 200, 7, 9};
  const int64_t threshold = 256;
  std::vector<PlannedResponse> ready;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ready.push_back(Allreduce(std::to_string(i), sizes[i]));
  }
  std::vector<std::string> seen;
  int fused = 0;
  for (const auto& response : FusionPlanner(threshold).Plan(ready)) {
    std::vector<int64_t> pack;
    for (const auto& name : response.names) pack.push_back(sizes[std::stoul(name)]);
    seen.insert(seen.end(), response.names.begin(), response.names.end());
    if (pack.size() < 2) continue;
    ++fused;
    int64_t total = 0;
    FusionOffsets(pack, &total);
    EXPECT_LE(total, threshold);
  }
  EXPECT_GT(fused, 0);
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}));
}

TEST(FusionPlanner, TensorLargerThanThresholdRunsAlone) {
  FusionPlanner planner(100);
  EXPECT_EQ(NamesOf(planner.Plan({Allreduce("small1", 10), Allreduce("big", 101),
                                  Allreduce("small2", 10), Allreduce("small3", 10)})),
            (Groups{{"small1", "small2"}, {"big"}, {"small3"}}));
  // Nothing joins the large tensor's response, even a tiny tensor right after it.
  EXPECT_EQ(NamesOf(planner.Plan({Allreduce("big", 500), Allreduce("tiny", 1)})),
            (Groups{{"big"}, {"tiny"}}));
}

TEST(FusionPlanner, ManySmallTensorsFillSeveralBuffersInOrder) {
  FusionPlanner planner(64 * 3);  // room for three 64-byte slots
  std::vector<PlannedResponse> ready;
  for (int i = 0; i < 7; ++i) ready.push_back(Allreduce("t" + std::to_string(i), 8));
  EXPECT_EQ(NamesOf(planner.Plan(ready)), (Groups{{"t0", "t1", "t2"}, {"t3", "t4", "t5"}, {"t6"}}));
}

TEST(FusionPlanner, ThresholdZeroDisablesFusion) {
  FusionPlanner planner(0);
  // Empty tensors too: "0 disables fusion" has no exceptions.
  EXPECT_EQ(NamesOf(planner.Plan(
                {Allreduce("a", 4), Allreduce("b", 4), Allreduce("e1", 0), Allreduce("e2", 0)})),
            (Groups{{"a"}, {"b"}, {"e1"}, {"e2"}}));
}

TEST(FusionPlanner, LargeTensorsRunAloneInPlaceWhileSmallOnesAroundThemFuse) {
  FusionPlanner planner(1 << 20, /*in_place_bytes=*/1000);
  EXPECT_EQ(NamesOf(planner.Plan({Allreduce("s1", 10), Allreduce("big", 1000), Allreduce("s2", 999),
                                  Allreduce("huge", 5000)})),
            (Groups{{"s1", "s2"}, {"big"}, {"huge"}}));
}

PlannedResponse Allgather(const std::string& name, int64_t bytes, std::vector<int64_t> first_dims) {
  PlannedResponse p = Allreduce(name, bytes);
  p.response.op = OpType::kAllgather;
  p.response.first_dims = std::move(first_dims);
  return p;
}

TEST(FusionPlanner, ErrorsAndOtherCollectivesPassThroughUnfused) {
  PlannedResponse error = Allreduce("bad", 4);
  error.response.kind = Response::Kind::kError;
  error.response.error_message = "ranks disagree";
  PlannedResponse error2 = error;
  error2.response.names = {"bad2"};
  PlannedResponse bcast = Allreduce("b", 4);
  bcast.response.op = OpType::kBroadcast;
  PlannedResponse bcast2 = bcast;
  bcast2.response.names = {"b2"};

  std::vector<Response> plan = FusionPlanner(1 << 20).Plan(
      {Allreduce("x", 4), error, bcast, bcast2, error2, Allreduce("y", 4)});
  EXPECT_EQ(NamesOf(plan), (Groups{{"x", "y"}, {"bad"}, {"b"}, {"b2"}, {"bad2"}}));
  EXPECT_EQ(plan[1].kind, Response::Kind::kError);
  EXPECT_EQ(plan[1].error_message, "ranks disagree");
}

TEST(FusionPlanner, AllgathersFuseWithEachOtherAndCarryEveryTensorsFirstDimensions) {
  std::vector<Response> plan = FusionPlanner(1 << 20).Plan(
      {Allgather("g1", 12, {1, 2}), Allreduce("x", 4), Allgather("g2", 30, {3, 0}),
       Allreduce("y", 4)});
  EXPECT_EQ(NamesOf(plan), (Groups{{"g1", "g2"}, {"x", "y"}}));
  EXPECT_EQ(plan[0].op, OpType::kAllgather);
  EXPECT_EQ(plan[0].first_dims, (std::vector<int64_t>{1, 2, 3, 0}));
  EXPECT_TRUE(plan[0].tensor_sizes.empty());
  EXPECT_EQ(plan[1].op, OpType::kAllreduce);
}

TEST(FusionPlanner, ReducescattersFuseWithEachOtherNotWithAllreduces) {
  PlannedResponse rs1 = Allreduce("rs1", 16), rs2 = Allreduce("rs2", 16),
                  scaled = Allreduce("rs.scaled", 16);
  for (PlannedResponse* p : {&rs1, &rs2, &scaled}) p->response.op = OpType::kReducescatter;
  scaled.response.postscale = 0.5;
  EXPECT_EQ(NamesOf(FusionPlanner(1 << 20).Plan(
                {rs1, Allreduce("x", 4), scaled, rs2, Allreduce("y", 4)})),
            (Groups{{"rs1", "rs2"}, {"x", "y"}, {"rs.scaled"}}));
}

TEST(FusionPlanner, AllgathersFuseWithinTheThresholdOfTheirOutputs) {
  FusionPlanner planner(/*threshold_bytes=*/200, /*in_place_bytes=*/150);
  PlannedResponse other_dtype = Allgather("g64", 8, {1, 1});
  other_dtype.response.dtype = DataType::kFloat64;
  EXPECT_EQ(NamesOf(planner.Plan({Allgather("a", 100, {1, 1}), Allgather("b", 100, {1, 1}),
                                  Allgather("big", 150, {1, 1}), other_dtype,
                                  Allgather("c", 36, {1, 1})})),
            (Groups{{"a", "c"}, {"b"}, {"big"}, {"g64"}}));
}

TEST(FusionPlanner, DifferentSignaturesAreNotFused) {
  const std::vector<std::pair<const char*, void (*)(Response*)>> changes = {
      {"dtype", [](Response* r) { r->dtype = DataType::kFloat64; }},
      {"reduce op", [](Response* r) { r->reduce_op = ReduceOp::kMax; }},
      {"prescale", [](Response* r) { r->prescale = 0.5; }},
      {"postscale", [](Response* r) { r->postscale = 0.25; }},
      {"device", [](Response* r) { r->device = 0; }},
  };
  FusionPlanner planner(1 << 20);
  for (const auto& [field, change] : changes) {
    PlannedResponse other = Allreduce("other", 8);
    change(&other.response);
    std::vector<Response> plan = planner.Plan({Allreduce("a", 8), other, Allreduce("b", 8)});
    EXPECT_EQ(NamesOf(plan), (Groups{{"a", "b"}, {"other"}})) << field;
  }
}

}  // namespace
}  // namespace horde

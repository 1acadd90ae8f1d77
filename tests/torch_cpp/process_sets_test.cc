// Process sets of <horde/torch.h>: collectives among some ranks, root ranks of the job
// translated into the set, errors on ranks outside it, registration. main() sets
// HORDE_DYNAMIC_PROCESS_SETS=1, so sets are added and removed after init().
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tests/torch_cpp/test_util.h"

namespace {

using horde::ProcessSet;
using horde::Status;
using horde::StatusCode;
using horde_test::ErrorOf;
namespace ht = horde::torch;

// The ranks of the job with this parity: every rank is in exactly one of the two sets.
std::vector<int> RanksOfParity(int parity) {
  std::vector<int> ranks;
  for (int r = parity; r < horde::size(); r += 2) ranks.push_back(r);
  return ranks;
}

// "[1, 3]", as horde's messages write ranks.
std::string RanksText(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

std::string NotInSet(int rank, const ProcessSet& set) {
  return "rank " + std::to_string(rank) + " is not in process set " + std::to_string(set.id()) +
         " (ranks " + RanksText(set.ranks()) + ")";
}

void ExpectInvalidArgument(const Status& status, const std::string& text) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

TEST(GlobalProcessSet, CoversEveryRankAndCannotBeRemoved) {
  const ProcessSet global = horde::global_process_set();
  EXPECT_EQ(global, ProcessSet());
  EXPECT_EQ(global.id(), 0);
  std::vector<int> all;
  for (int r = 0; r < horde::size(); ++r) all.push_back(r);
  EXPECT_EQ(global.ranks(), all);
  EXPECT_EQ(global.size(), horde::size());
  EXPECT_EQ(global.rank(), horde::rank());
  EXPECT_TRUE(global.included());
  ExpectInvalidArgument(ErrorOf([&] { horde::remove_process_set(global); }),
                        "the global process set (id 0) cannot be removed");
}

// Two sets, the even ranks and the odd ones; each rank works in its own.
class ProcessSets : public ::testing::Test {
 protected:
  void SetUp() override {
    if (horde::size() < 2) GTEST_SKIP() << "needs 2 ranks";
    even_ = horde::add_process_set(RanksOfParity(0));
    odd_ = horde::add_process_set(RanksOfParity(1));
    const bool odd = horde::rank() % 2 == 1;
    mine_ = odd ? odd_ : even_;
    other_ = odd ? even_ : odd_;
  }
  void TearDown() override {
    if (horde::size() < 2) return;
    horde::remove_process_set(even_);
    horde::remove_process_set(odd_);
  }

  // The sum over my set's ranks of f(rank).
  template <typename F>
  double SumOverMine(F f) const {
    double sum = 0;
    for (int r : mine_.ranks()) sum += f(r);
    return sum;
  }

  ProcessSet even_, odd_, mine_, other_;
};

TEST_F(ProcessSets, RanksWithinTheSet) {
  EXPECT_GT(even_.id(), 0);
  EXPECT_GT(odd_.id(), even_.id());
  EXPECT_NE(even_, odd_);
  EXPECT_EQ(mine_.ranks(), RanksOfParity(horde::rank() % 2));
  EXPECT_EQ(mine_.size(), static_cast<int>(mine_.ranks().size()));
  EXPECT_EQ(mine_.rank(), horde::rank() / 2);
  EXPECT_TRUE(mine_.included());
  EXPECT_EQ(other_.rank(), -1);
  EXPECT_FALSE(other_.included());
}

TEST_F(ProcessSets, AllreduceAmongTheSetsRanks) {
  const int me = horde::rank();
  at::Tensor mine = at::full({4}, me + 1.0, at::kDouble);
  const double sum = SumOverMine([](int r) { return r + 1.0; });
  EXPECT_TRUE(ht::allreduce(mine, {horde::Sum, "ps.sum", 1.0, 1.0, mine_})
                  .equal(at::full({4}, sum, at::kDouble)));
  ht::AllreduceOptions average;
  average.name = "ps.average";
  average.process_set = mine_;
  at::Tensor in_place = mine.clone();
  EXPECT_TRUE(ht::allreduce_async_(in_place, average).wait().is_same(in_place));
  EXPECT_TRUE(in_place.allclose(at::full({4}, sum / mine_.size(), at::kDouble)));

  at::Tensor rows = at::full({mine_.size(), 2}, me + 1.0, at::kDouble);
  at::Tensor share = ht::reducescatter(rows, {horde::Sum, "ps.reducescatter", 1.0, 1.0, mine_});
  EXPECT_TRUE(share.equal(at::full({1, 2}, sum, at::kDouble)));
}

TEST_F(ProcessSets, AllgatherAlltoallAndBarrierInSetOrder) {
  const int me = horde::rank();
  at::Tensor gathered = ht::allgather(at::full({1}, me, at::kInt), "ps.allgather", mine_);
  EXPECT_TRUE(gathered.equal(at::tensor(mine_.ranks(), at::kInt)));
  EXPECT_TRUE(ht::allgather_async(at::full({1}, me, at::kInt), "", mine_).wait().equal(gathered));

  const int n = mine_.size();
  at::Tensor sent = at::arange(n, at::kFloat) + 10 * mine_.rank();
  ht::AlltoallResult result = ht::alltoall_async(sent, {}, "ps.alltoall", mine_).wait();
  EXPECT_TRUE(result.output.equal(at::arange(n, at::kFloat) * 10 + mine_.rank()));
  EXPECT_TRUE(result.received_splits.equal(at::ones({n}, at::kInt)));
  ht::barrier(mine_);
}

TEST_F(ProcessSets, BroadcastFromARootOfTheJobInTheSet) {
  const int root = mine_.ranks().back();  // a rank of the job; within the set it is n - 1
  at::Tensor mine = at::full({3}, horde::rank(), at::kLong);
  EXPECT_TRUE(
      ht::broadcast(mine, root, "ps.broadcast", mine_).equal(at::full({3}, root, at::kLong)));
  EXPECT_TRUE(ht::broadcast_(mine, root, "", mine_).is_same(mine));
  EXPECT_TRUE(mine.equal(at::full({3}, root, at::kLong)));
}

TEST_F(ProcessSets, BroadcastRootOutsideTheSetThrowsOnThatRank) {
  const int root = other_.ranks().front();
  Status status = ErrorOf([&] { ht::broadcast(at::ones({2}), root, "ps.bad.root", mine_); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "broadcast: root_rank " + std::to_string(root) +
                                  " is not in process set " + std::to_string(mine_.id()) +
                                  " (ranks " + RanksText(mine_.ranks()) + ")");
  ::torch::OrderedDict<std::string, at::Tensor> named;
  named.insert("t", at::ones({2}));
  ExpectInvalidArgument(ErrorOf([&] { ht::broadcast_parameters(named, root, mine_); }),
                        "is not in process set");
  // Nothing was left in flight: the set's next collective works.
  EXPECT_TRUE(ht::allreduce(at::ones({1}), {horde::Sum, "ps.after.bad.root", 1.0, 1.0, mine_})
                  .equal(at::full({1}, mine_.size(), at::kFloat)));
}

TEST_F(ProcessSets, ARankOutsideTheSetGetsInvalidArgument) {
  const std::string expected = NotInSet(horde::rank(), other_);
  const at::Tensor t = at::ones({other_.size()});
  ExpectInvalidArgument(ErrorOf([&] {
                          ht::allreduce(t, {horde::Sum, "", 1.0, 1.0, other_});
                        }),
                        expected);
  ExpectInvalidArgument(ErrorOf([&] { ht::allgather(t, "", other_); }), expected);
  ExpectInvalidArgument(ErrorOf([&] { ht::broadcast(t, other_.ranks()[0], "", other_); }),
                        expected);
  ExpectInvalidArgument(ErrorOf([&] { ht::alltoall(t, {}, "", other_); }), expected);
  ExpectInvalidArgument(ErrorOf([&] { ht::barrier(other_); }), expected);
  torch::Tensor w = torch::zeros({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, 1.0);
  ::torch::OrderedDict<std::string, at::Tensor> named;
  named.insert("w", w);
  ExpectInvalidArgument(
      ErrorOf([&] { ht::DistributedOptimizer optimizer(sgd, named, 1, horde::Average, other_); }),
      "DistributedOptimizer: " + expected);
}

TEST_F(ProcessSets, TrainingHelpersWorkWithinTheSet) {
  const int me = horde::rank(), root = mine_.ranks().back();
  torch::Tensor w = torch::full({2}, static_cast<float>(me), torch::requires_grad());
  ::torch::OrderedDict<std::string, at::Tensor> named;
  named.insert("w", w);
  ht::broadcast_parameters(named, root, mine_);
  EXPECT_TRUE(w.equal(torch::full({2}, static_cast<float>(root))));

  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(me + 1.0));
  ht::broadcast_optimizer_state(sgd, root, mine_);
  EXPECT_EQ(static_cast<torch::optim::SGDOptions&>(sgd.param_groups()[0].options()).lr(),
            root + 1.0);

  // The gradient is me + 1; averaged over the set, one step of lr 1 leaves root - mean.
  static_cast<torch::optim::SGDOptions&>(sgd.param_groups()[0].options()).lr(1.0);
  ht::DistributedOptimizer optimizer(sgd, named, 1, horde::Average, mine_);
  optimizer.zero_grad();
  (w * (me + 1.0)).sum().backward();
  optimizer.step();
  const double mean = SumOverMine([](int r) { return r + 1.0; }) / mine_.size();
  EXPECT_TRUE(w.allclose(torch::full({2}, static_cast<float>(root - mean)))) << w;
}

TEST(ProcessSetRegistration, AddAndRemove) {
  ProcessSet first = horde::add_process_set({0});
  EXPECT_EQ(first.ranks(), std::vector<int>{0});
  EXPECT_EQ(first.rank(), horde::rank() == 0 ? 0 : -1);
  ExpectInvalidArgument(ErrorOf([] { horde::add_process_set({0}); }),
                        "process set [0] already exists (id " + std::to_string(first.id()) + ")");
  ExpectInvalidArgument(ErrorOf([] { horde::add_process_set({}); }),
                        "needs at least one rank; got []");
  ExpectInvalidArgument(ErrorOf([] {
                          horde::add_process_set({0, 0});
                        }),
                        "rank 0 appears more than once");
  ExpectInvalidArgument(ErrorOf([] { horde::add_process_set({horde::size()}); }),
                        "is out of range");
  horde::remove_process_set(first);
  const std::string unknown = "unknown process set id " + std::to_string(first.id());
  ExpectInvalidArgument(ErrorOf([&] { ht::allgather(at::ones({1}), "", first); }), unknown);
  ExpectInvalidArgument(ErrorOf([&] { horde::remove_process_set(first); }), unknown);
  ProcessSet again = horde::add_process_set({0});
  EXPECT_GT(again.id(), first.id()) << "ids are never reused";
  horde::remove_process_set(again);
  if (horde::size() < 3) return;  // any other set of 2 ranks is the global one
  ProcessSet unsorted = horde::add_process_set({2, 0});
  EXPECT_EQ(unsorted.ranks(), (std::vector<int>{0, 2}));
  EXPECT_EQ(unsorted.rank(), horde::rank() == 0 ? 0 : horde::rank() == 2 ? 1 : -1);
  horde::remove_process_set(unsorted);
}

// Leaves horde initialized with HORDE_DYNAMIC_PROCESS_SETS=1 and no sets, as main() does.
TEST(ProcessSetRegistration, InitWithProcessSetsAndWithoutDynamicSets) {
  const std::vector<int> odd = RanksOfParity(1);
  // A rank that shuts down stops the others' runtimes: none may still be using them.
  ht::barrier();
  horde::shutdown();
  setenv("HORDE_DYNAMIC_PROCESS_SETS", "0", 1);
  std::vector<ProcessSet> sets = horde::init({{0}, odd});
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].ranks(), std::vector<int>{0});
  EXPECT_EQ(sets[1].ranks(), odd);
  EXPECT_GT(sets[1].id(), sets[0].id());
  for (const ProcessSet& set : sets) {
    if (!set.included()) continue;
    EXPECT_TRUE(ht::allreduce(at::ones({1}), {horde::Sum, "ps.init", 1.0, 1.0, set})
                    .equal(at::full({1}, set.size(), at::kFloat)));
  }
  ExpectInvalidArgument(ErrorOf([] { horde::init({{0}}); }), "horde is already initialized");
  EXPECT_TRUE(horde::init({}).empty());
  ExpectInvalidArgument(ErrorOf([] {
                          horde::add_process_set({0, 1});
                        }),
                        "add_process_set after init() needs HORDE_DYNAMIC_PROCESS_SETS=1");
  ExpectInvalidArgument(ErrorOf([&] { horde::remove_process_set(sets[0]); }),
                        "remove_process_set needs HORDE_DYNAMIC_PROCESS_SETS=1");

  ht::barrier();
  horde::shutdown();
  setenv("HORDE_DYNAMIC_PROCESS_SETS", "1", 1);
  ExpectInvalidArgument(
      ErrorOf([] {
        horde::init({{0, 0}});
      }),
      "init(process_sets=...): process set [0, 0]: rank 0 appears more than once");
  EXPECT_FALSE(horde::is_initialized());
  horde::init();
  ExpectInvalidArgument(ErrorOf([&] { ht::barrier(sets[0]); }), "unknown process set id");
}

}  // namespace

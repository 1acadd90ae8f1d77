// A rank's side of join: naming the join, where identity tensors go, the entries a
// joined rank executes (the identity for names it lacks), and completing the join.
#include "core/rank_join.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/host_tensor.h"

namespace horde {
namespace {

Request Ask(OpType op, const std::string& name, int32_t device = kCpuDevice) {
  Request r;
  r.op = op;
  r.name = name;
  r.shape = {2};
  r.device = device;
  return r;
}

// A queue holding a float32 allreduce of two elements for each of `names`, and a join
// whose output is an int32 tensor, as the torch side submits it.
class Queued {
 public:
  explicit Queued(const std::vector<std::string>& names) {
    std::vector<Request> requests;
    std::vector<TensorEntry> entries;
    for (const std::string& name : names) {
      requests.push_back(Ask(name == kJoinName ? OpType::kJoin : OpType::kAllreduce, name));
      TensorEntry entry;
      entry.name = name;
      const DataType dtype = name == kJoinName ? DataType::kInt32 : DataType::kFloat32;
      entry.input = std::make_shared<HostTensor>(dtype, TensorShape{name == kJoinName ? 1 : 2});
      entry.output = entry.input;
      entries.push_back(std::move(entry));
    }
    EXPECT_TRUE(queue.Add(&requests, &entries).ok());
  }
  TensorQueue queue;
};

Response Allreduce(std::vector<std::string> names, ReduceOp op = ReduceOp::kSum,
                   int32_t device = kCpuDevice) {
  Response r;
  r.op = OpType::kAllreduce;
  r.names = names;
  r.reduce_op = op;
  r.device = device;
  r.tensor_sizes.assign(names.size(), 3);
  r.with_joined = true;
  return r;
}

std::vector<std::string> Names(const std::vector<TensorEntry>& entries) {
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name);
  return names;
}

// A registry whose device identities are host tensors, noting the device asked for.
std::unique_ptr<OpRegistry> Recording(std::vector<int32_t>* devices) {
  auto ops = std::make_unique<OpRegistry>();
  ops->SetDeviceIdentity([devices](DataType dtype, ReduceOp op, const TensorShape& shape,
                                   int32_t device, std::shared_ptr<Tensor>* out) {
    devices->push_back(device);
    return HostIdentity(dtype, op, shape, device, out);
  });
  return ops;
}

TEST(RankJoin, NamesTheJoinAndLeavesOtherNamesAlone) {
  RankJoin join;
  Request joining = Ask(OpType::kJoin, "");
  join.Submitting(&joining);
  EXPECT_EQ(joining.name, kJoinName);
  Request named = Ask(OpType::kAllreduce, "w", 3);
  join.Submitting(&named);
  EXPECT_EQ(named.name, "w");
  Request unnamed = Ask(OpType::kAllreduce, "");
  join.Submitting(&unnamed);
  EXPECT_EQ(unnamed.name, "") << "unnamed operations are numbered by the runtime";
}

TEST(RankJoin, ARankThatHasNotJoinedTakesItsOwnEntries) {
  Queued queued({"a", "b"});
  RankJoin join;
  OpRegistry ops;
  std::vector<TensorEntry> entries;
  ASSERT_TRUE(join.TakeEntries(Allreduce({"b", "a"}), &queued.queue, ops, &entries).ok());
  EXPECT_EQ(Names(entries), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(entries[0].input->shape(), TensorShape{2});
}

TEST(RankJoin, AJoinedRankContributesTheIdentityForNamesItLacks) {
  Queued queued({"mine"});
  RankJoin join;
  join.Joining();
  OpRegistry ops;
  std::vector<TensorEntry> entries;
  ASSERT_TRUE(
      join.TakeEntries(Allreduce({"lacked", "mine"}, ReduceOp::kMin), &queued.queue, ops, &entries)
          .ok());
  ASSERT_EQ(Names(entries), (std::vector<std::string>{"lacked", "mine"}));
  const std::shared_ptr<Tensor>& identity = entries[0].input;
  ASSERT_NE(identity, nullptr);
  EXPECT_EQ(identity, entries[0].output) << "in place";
  EXPECT_EQ(identity->shape(), TensorShape{3}) << "the size the response carries";
  EXPECT_EQ(identity->device(), kCpuDevice);
  EXPECT_EQ(static_cast<float*>(identity->data())[2], std::numeric_limits<float>::infinity());
  EXPECT_EQ(entries[1].input->shape(), TensorShape{2}) << "its own tensor";
  CompleteEntry(entries[0], Status::Ok());  // nobody waits on an identity
}

TEST(RankJoin, IdentitiesGoOnTheJoinsDeviceElseTheLastGpuUsedAndHostForHostOps) {
  std::vector<int32_t> devices;
  std::unique_ptr<OpRegistry> ops = Recording(&devices);
  RankJoin join;
  join.Joining();
  auto take = [&](int32_t response_device) {
    TensorQueue empty;
    std::vector<TensorEntry> entries;
    EXPECT_TRUE(
        join.TakeEntries(Allreduce({"x"}, ReduceOp::kSum, response_device), &empty, *ops, &entries)
            .ok());
  };
  take(1);  // nothing submitted from a GPU: the response's device
  Request gpu = Ask(OpType::kAllreduce, "g", 4);
  join.Submitting(&gpu);
  take(1);
  Request joining = Ask(OpType::kJoin, "", 6);
  join.Submitting(&joining);
  take(1);
  take(kCpuDevice);
  EXPECT_EQ(devices, (std::vector<int32_t>{1, 4, 6}));
}

TEST(RankJoin, AnIdentityThatCannotBeMadeFailsTheResponseWithEveryNameTaken) {
  Queued queued({"mine"});
  RankJoin join;
  join.Joining();
  OpRegistry ops;  // no GPU path
  std::vector<TensorEntry> entries;
  const Status s = join.TakeEntries(Allreduce({"a", "mine", "b"}, ReduceOp::kSum, 1), &queued.queue,
                                    ops, &entries);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(),
            "the identity this joined rank contributes: this build has no GPU path for tensors "
            "on cuda:1");
  EXPECT_EQ(Names(entries), (std::vector<std::string>{"a", "mine", "b"}));
  EXPECT_EQ(entries[0].input, nullptr);
  EXPECT_EQ(entries[2].input, nullptr) << "no second try once one failed";
}

TEST(RankJoin, AnErrorResponseTakesOnlyTheRanksOwnEntries) {
  Queued queued({"mine"});
  RankJoin join;
  join.Joining();
  OpRegistry ops;
  Response error = Allreduce({"mine"});
  error.kind = Response::Kind::kError;
  std::vector<TensorEntry> entries;
  ASSERT_TRUE(join.TakeEntries(error, &queued.queue, ops, &entries).ok());
  EXPECT_EQ(Names(entries), std::vector<std::string>{"mine"});
}

TEST(RankJoin, CompletingTheJoinHandsOutTheLastRankAndEndsTheSubstitution) {
  Queued queued({kJoinName});
  RankJoin join;
  join.Joining();
  Response completed;
  completed.op = OpType::kJoin;
  completed.names = {kJoinName};
  completed.root = 5;
  std::vector<TensorEntry> entries;
  join.Complete(completed, &queued.queue, &entries);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(*static_cast<int32_t*>(entries[0].output->data()), 5);

  TensorQueue empty;
  OpRegistry ops;
  std::vector<TensorEntry> after;
  ASSERT_TRUE(join.TakeEntries(Allreduce({"x"}), &empty, ops, &after).ok());
  EXPECT_TRUE(after.empty()) << "a rank no longer joined makes no identities";
}

TEST(RankJoin, AJoinIsInProgressFromTheRoundThatSawItToItsCompletion) {
  RankJoin join;
  EXPECT_FALSE(join.in_progress());
  join.SawJoin();
  EXPECT_TRUE(join.in_progress());
  join.SawCompletion();
  EXPECT_FALSE(join.in_progress());
}

}  // namespace
}  // namespace horde

#include "core/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <optional>
#include <stdexcept>

#include "tests/cpp/runtime_harness.h"

namespace horde {
namespace {

using testing::ExpectOk;
using testing::FloatTensor;
using testing::kPatience;
using testing::Outcome;

// Holds a collective until the test opens it, so the test can queue work on every rank
// while all background loops are known to be busy (for deterministic fusion).
class Gate {
 public:
  void Pass() {
    std::unique_lock<std::mutex> lock(mu_);
    ++arrived_;
    cv_.notify_all();
    cv_.wait_for(lock, kPatience, [&] { return open_; });
  }
  bool WaitForArrivals(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return arrived_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  bool open_ = false;
};

// The in-test collective: adds 1 to every element it is given and logs which names each
// response carried. Names starting "fail" return an error, "throw" throw, "gate" wait.
class RecordingOp : public CollectiveOp {
 public:
  RecordingOp(std::vector<std::vector<std::string>>* log, std::mutex* mu, Gate* gate)
      : log_(log), mu_(mu), gate_(gate) {}
  bool Enabled(const Response&, const std::vector<TensorEntry>&) const override { return true; }
  Status Execute(std::vector<TensorEntry>& entries, const Response& response) override {
    const std::string& first = response.names[0];
    if (first.rfind("gate", 0) == 0) gate_->Pass();
    if (first.rfind("throw", 0) == 0) throw std::runtime_error("boom");
    if (first.rfind("fail", 0) == 0) return Status::Internal("injected failure");
    std::vector<std::string> names;
    for (auto& entry : entries) {
      names.push_back(entry.name);
      for (float& v : static_cast<FloatTensor*>(entry.input.get())->values) v += 1.0f;
    }
    EXPECT_EQ(names, response.names) << "entries must arrive in the response's name order";
    std::lock_guard<std::mutex> lock(*mu_);
    log_->push_back(response.names);
    return Status::Ok();
  }

 private:
  std::vector<std::vector<std::string>>* log_;
  std::mutex* mu_;
  Gate* gate_;
};

// Two ranks with RecordingOp for every op type. Declared before the runtimes, the logs
// and the gate outlive their background loops.
class TwoRanks {
 public:
  TwoRanks()
      : ranks_([this](int rank) {
          auto ops = std::make_unique<OpRegistry>();
          for (int op = 0; op < kNumOpTypes; ++op) {
            ops->Register(static_cast<OpType>(op),
                          std::make_unique<RecordingOp>(&logs_[rank], &log_mu_, &gate_));
          }
          return ops;
        }) {}

  Runtime& operator[](int rank) { return ranks_[rank]; }
  Gate& gate() { return gate_; }
  std::vector<std::vector<std::string>> log(int rank) {
    std::lock_guard<std::mutex> lock(log_mu_);
    return logs_[rank];
  }

 private:
  std::mutex log_mu_;
  std::vector<std::vector<std::string>> logs_[2];
  Gate gate_;
  testing::RankPair ranks_;
};

Request Op(const std::string& name, size_t n = 4, OpType op = OpType::kAllreduce) {
  Request r;
  r.name = name;
  r.op = op;
  r.shape = {static_cast<int64_t>(n)};
  return r;
}

Status Submit(Runtime& runtime, Request request, Outcome* outcome,
              std::shared_ptr<FloatTensor> tensor = nullptr) {
  if (!tensor) tensor = std::make_shared<FloatTensor>(static_cast<size_t>(request.shape[0]));
  return testing::Submit(runtime, std::move(request), outcome, tensor);
}

TEST(Runtime, EnqueuedOperationsCompleteOnEveryRank) {
  TwoRanks ranks;
  Outcome done[2][3];
  std::shared_ptr<FloatTensor> tensors[2];
  for (int rank = 0; rank < 2; ++rank) {
    tensors[rank] = std::make_shared<FloatTensor>(3, 5.0f);
    Request bcast = Op("b", 4, OpType::kBroadcast);
    bcast.root = 1;
    ASSERT_TRUE(Submit(ranks[rank], Op("a", 3), &done[rank][0], tensors[rank]).ok());
    ASSERT_TRUE(Submit(ranks[rank], bcast, &done[rank][1]).ok());
    ASSERT_TRUE(Submit(ranks[rank], Op("g", 4, OpType::kAllgather), &done[rank][2]).ok());
  }
  for (int rank = 0; rank < 2; ++rank) {
    for (auto& outcome : done[rank]) ExpectOk(&outcome, "rank " + std::to_string(rank));
    // The collective ran on this rank's own tensor, exactly once.
    EXPECT_EQ(tensors[rank]->values, std::vector<float>(3, 6.0f));
    std::vector<std::string> executed;
    for (const auto& names : ranks.log(rank)) {
      executed.insert(executed.end(), names.begin(), names.end());
    }
    std::sort(executed.begin(), executed.end());
    EXPECT_EQ(executed, (std::vector<std::string>{"a", "b", "g"}));
    for (auto& outcome : done[rank]) EXPECT_EQ(outcome.calls(), 1);
  }
}

TEST(Runtime, UnnamedOperationsAreNumberedPerOpTypeAndMatchAcrossRanks) {
  TwoRanks ranks;
  Outcome done[2][3];
  for (int rank = 0; rank < 2; ++rank) {
    // A named operation in between must not shift the numbering.
    ASSERT_TRUE(Submit(ranks[rank], Op(""), &done[rank][0]).ok());
    ASSERT_TRUE(Submit(ranks[rank], Op("named." + std::to_string(rank)), &done[rank][1]).ok());
    ASSERT_TRUE(Submit(ranks[rank], Op(""), &done[rank][2]).ok());
  }
  for (int rank = 0; rank < 2; ++rank) {
    ExpectOk(&done[rank][0], "first unnamed op");
    ExpectOk(&done[rank][2], "second unnamed op");
    std::vector<std::string> executed;
    for (const auto& names : ranks.log(rank))
      executed.insert(executed.end(), names.begin(), names.end());
    EXPECT_NE(std::find(executed.begin(), executed.end(), "allreduce.noname.0"), executed.end());
    EXPECT_NE(std::find(executed.begin(), executed.end(), "allreduce.noname.1"), executed.end());
  }
  // The differently named ops never match; shutting down completes them.
  ranks[0].Shutdown();
  for (int rank = 0; rank < 2; ++rank) {
    std::optional<Status> s = done[rank][1].Wait();
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->code(), StatusCode::kAborted);
  }
}

TEST(Runtime, LocalMistakesAreReturnedFromEnqueue) {
  TwoRanks ranks;
  struct Case {
    Request request;
    std::string expected;
  };
  Request root_too_big = Op("b1", 4, OpType::kBroadcast);
  root_too_big.root = 2;
  Request root_negative = Op("b2", 4, OpType::kBroadcast);
  root_negative.root = -1;
  Request bool_average = Op("flags");
  bool_average.dtype = DataType::kBool;
  bool_average.reduce_op = ReduceOp::kAverage;
  Request infinite_scale = Op("scaled");
  infinite_scale.postscale = std::numeric_limits<double>::infinity();
  Request too_deep = Op("deep", 1);
  const std::vector<int64_t> ones(kMaxTensorDims + 1, 1);
  too_deep.shape.assign(ones.begin(), ones.end());
  std::vector<Case> cases = {
      {root_too_big, "root rank 2 is out of range; expected 0 <= root_rank < 2"},
      {root_negative, "root rank -1 is out of range"},
      {bool_average, "Average is not defined for bool tensors"},
      {infinite_scale, "is not a finite number"},
      {too_deep, "at most 64 dimensions, got 65"},
  };
  std::vector<Outcome> outcomes(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    Status s = Submit(ranks[0], cases[i].request, &outcomes[i]);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << cases[i].expected;
    EXPECT_NE(s.message().find(cases[i].expected), std::string::npos) << s.message();
  }

  // A name in flight on this rank cannot be reused until it completes.
  Outcome first[2], duplicate;
  ASSERT_TRUE(Submit(ranks[0], Op("dup"), &first[0]).ok());
  Status s = Submit(ranks[0], Op("dup"), &duplicate);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("already in flight"), std::string::npos) << s.message();
  ASSERT_TRUE(Submit(ranks[1], Op("dup"), &first[1]).ok());
  ExpectOk(&first[0], "dup on rank 0");
  ExpectOk(&first[1], "dup on rank 1");

  // Rejected operations never reach their callbacks, even after rounds have run.
  for (auto& outcome : outcomes) EXPECT_EQ(outcome.calls(), 0);
  EXPECT_EQ(duplicate.calls(), 0);
}

TEST(Runtime, MismatchFailsOnBothRanksAndTheNextOperationSucceeds) {
  TwoRanks ranks;
  Outcome bad[2], next[2];
  ASSERT_TRUE(Submit(ranks[0], Op("m", 4), &bad[0]).ok());
  ASSERT_TRUE(Submit(ranks[1], Op("m", 5), &bad[1]).ok());
  for (int rank = 0; rank < 2; ++rank) {
    std::optional<Status> s = bad[rank].Wait();
    ASSERT_TRUE(s.has_value()) << "rank " << rank;
    EXPECT_EQ(s->code(), StatusCode::kPreconditionError);
    for (const char* part : {"'m'", "shape", "[4] on rank 0", "[5] on rank 1"}) {
      EXPECT_NE(s->message().find(part), std::string::npos) << s->message();
    }
  }
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(Submit(ranks[rank], Op("m", 4), &next[rank]).ok());
  }
  for (int rank = 0; rank < 2; ++rank) ExpectOk(&next[rank], "rank " + std::to_string(rank));
  EXPECT_EQ(ranks[0].stats().error_responses, 1);
  EXPECT_EQ(ranks[1].stats().error_responses, 1);
}

TEST(Runtime, CollectiveFailuresReachTheCallbacks) {
  TwoRanks ranks;
  Outcome failed[2], thrown[2], fine[2];
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(Submit(ranks[rank], Op("fail.x"), &failed[rank]).ok());
    ASSERT_TRUE(Submit(ranks[rank], Op("throw.y", 4, OpType::kAllgather), &thrown[rank]).ok());
  }
  for (int rank = 0; rank < 2; ++rank) {
    std::optional<Status> s = failed[rank].Wait();
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->code(), StatusCode::kInternal);
    EXPECT_EQ(s->message(), "injected failure");
    s = thrown[rank].Wait();
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->code(), StatusCode::kInternal);
    EXPECT_EQ(s->message(), "allgather failed: boom");
  }
  for (int rank = 0; rank < 2; ++rank) ASSERT_TRUE(Submit(ranks[rank], Op("z"), &fine[rank]).ok());
  for (int rank = 0; rank < 2; ++rank) ExpectOk(&fine[rank], "rank " + std::to_string(rank));
}

TEST(Runtime, ShutdownAbortsAnOperationPendingOnOneRank) {
  TwoRanks ranks;
  Outcome lonely, other;
  ASSERT_TRUE(Submit(ranks[0], Op("lonely"), &lonely).ok());
  ASSERT_TRUE(Submit(ranks[1], Op("other"), &other).ok());
  const auto start = std::chrono::steady_clock::now();
  ranks[0].Shutdown();
  // Well within the transport's patience: the ranks left together, none timed out.
  EXPECT_LT(std::chrono::steady_clock::now() - start, kPatience / 2);
  for (Outcome* outcome : {&lonely, &other}) {
    std::optional<Status> s = outcome->Wait();
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->code(), StatusCode::kAborted) << s->message();
    EXPECT_NE(s->message().find("shut down"), std::string::npos) << s->message();
  }
  // Rank 1 left the loop too; later work is refused there at once.
  ranks[1].Shutdown();
  ranks[0].Shutdown();  // a second call is harmless
  Outcome late;
  Status s = Submit(ranks[1], Op("late"), &late);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(late.calls(), 0);
}

// Whoever learns from a callback that its operation is done may reuse its tensors at
// once (the optimizer re-points its tensor views): on every way an operation ends, the
// runtime has let go of them by then.
TEST(Runtime, EveryCompletionLetsGoOfTheTensorsBeforeItsCallback) {
  TwoRanks ranks;
  struct Watched {
    std::weak_ptr<FloatTensor> tensor;
    bool released_first = false;
    Outcome outcome;
  };
  Watched done[2], aborted;
  auto submit = [](Runtime& runtime, const std::string& name, Watched* watched) {
    auto tensor = std::make_shared<FloatTensor>(4);
    watched->tensor = tensor;
    TensorEntry entry;
    entry.name = name;
    entry.input = tensor;
    entry.output = std::move(tensor);  // the only owner is now the entry
    StatusCallback record = watched->outcome.callback();
    entry.callback = [watched, record](const Status& status) {
      watched->released_first = watched->tensor.expired();
      record(status);
    };
    return runtime.Enqueue(Op(name), std::move(entry));
  };
  // Executed on both ranks.
  for (int rank = 0; rank < 2; ++rank) ASSERT_TRUE(submit(ranks[rank], "both", &done[rank]).ok());
  for (Watched& watched : done) {
    ExpectOk(&watched.outcome, "both");
    EXPECT_TRUE(watched.released_first);
  }
  // Pending on one rank when the runtime shuts down.
  ASSERT_TRUE(submit(ranks[0], "lonely", &aborted).ok());
  ranks[0].Shutdown();
  ASSERT_TRUE(aborted.outcome.Wait().has_value());
  EXPECT_TRUE(aborted.released_first);
}

TEST(Runtime, StatsCountRoundsResponsesAndFusedTensors) {
  TwoRanks ranks;
  Outcome gate[2], fused[2][4];
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_TRUE(Submit(ranks[rank], Op("gate"), &gate[rank]).ok());
  }
  // With both loops held inside the gate's collective, the next four names reach
  // negotiation together on both ranks, so they become ready in one round.
  ASSERT_TRUE(ranks.gate().WaitForArrivals(2));
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(Submit(ranks[rank], Op("t" + std::to_string(i), 2 + i), &fused[rank][i]).ok());
    }
  }
  ranks.gate().Open();
  for (int rank = 0; rank < 2; ++rank) {
    ExpectOk(&gate[rank], "gate");
    for (auto& outcome : fused[rank]) ExpectOk(&outcome, "fused tensor");
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(ranks.log(rank).back(), (std::vector<std::string>{"t0", "t1", "t2", "t3"}));
    RuntimeStats stats = ranks[rank].stats();
    EXPECT_GE(stats.negotiation_rounds, 2);
    EXPECT_EQ(stats.responses_executed, 2);
    EXPECT_EQ(stats.error_responses, 0);
    EXPECT_EQ(stats.fused_responses, 1);
    EXPECT_EQ(stats.fused_tensors, 4);
    EXPECT_EQ(stats.tensors[static_cast<size_t>(OpType::kAllreduce)], 5);
    EXPECT_EQ(stats.bytes[static_cast<size_t>(OpType::kAllreduce)], 4 * (4 + 2 + 3 + 4 + 5));
    EXPECT_EQ(stats.tensors[static_cast<size_t>(OpType::kBroadcast)], 0);
  }
}

TEST(OpRegistry, RunsTheFirstEnabledImplementation) {
  struct Fixed : CollectiveOp {
    Fixed(bool enabled, Status result) : enabled(enabled), result(std::move(result)) {}
    bool Enabled(const Response&, const std::vector<TensorEntry>&) const override {
      return enabled;
    }
    Status Execute(std::vector<TensorEntry>&, const Response&) override { return result; }
    bool enabled;
    Status result;
  };
  OpRegistry registry;
  registry.Register(OpType::kAllreduce,
                    std::make_unique<Fixed>(false, Status::Internal("disabled")));
  registry.Register(OpType::kAllreduce, std::make_unique<Fixed>(true, Status::Aborted("second")));
  registry.Register(OpType::kAllreduce, std::make_unique<Fixed>(true, Status::Internal("third")));
  std::vector<TensorEntry> entries;
  Response response;
  EXPECT_EQ(registry.Execute(entries, response).message(), "second");

  response.op = OpType::kBroadcast;
  response.device = 2;
  Status s = registry.Execute(entries, response);
  EXPECT_EQ(s.code(), StatusCode::kPreconditionError);
  EXPECT_EQ(s.message(), "this build has no broadcast for tensors on cuda:2");
}

}  // namespace
}  // namespace horde

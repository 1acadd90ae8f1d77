#pragma once

// What the Runtime tests share: two ranks over the fake transport, a float tensor, and
// a recorder for an operation's completion.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "tests/cpp/fake_transport.h"

namespace horde {
namespace testing {

constexpr auto kPatience = std::chrono::seconds(10);  // far beyond any healthy wait

// A float32 host tensor backed by a vector.
class FloatTensor : public Tensor {
 public:
  explicit FloatTensor(size_t n, float value = 1.0f) : values(n, value) {}
  DataType dtype() const override { return DataType::kFloat32; }
  TensorShape shape() const override { return {static_cast<int64_t>(values.size())}; }
  int32_t device() const override { return kCpuDevice; }
  void* data() override { return values.data(); }
  std::vector<float> values;
};

// Records the completion of one operation: how often the callback ran, with what.
class Outcome {
 public:
  StatusCallback callback() {
    return [state = state_](const Status& s) {
      std::lock_guard<std::mutex> lock(state->mu);
      ++state->calls;
      state->status = s;
      state->cv.notify_all();
    };
  }
  // The status the callback got, or nullopt if it did not come in time.
  std::optional<Status> Wait() {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (!state_->cv.wait_for(lock, kPatience, [&] { return state_->calls > 0; })) return {};
    return state_->status;
  }
  int calls() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->calls;
  }

 private:
  struct State {
    mutable std::mutex mu;
    std::condition_variable cv;
    int calls = 0;
    Status status;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Waits for the outcome and expects it to succeed.
inline void ExpectOk(Outcome* outcome, const std::string& what) {
  std::optional<Status> s = outcome->Wait();
  ASSERT_TRUE(s.has_value()) << what << " never completed";
  EXPECT_TRUE(s->ok()) << what << ": " << s->message();
}

// Two ranks, each a Runtime over the fake transport with the ops `make_ops` gives it.
class RankPair {
 public:
  explicit RankPair(const std::function<std::unique_ptr<OpRegistry>(int rank)>& make_ops,
                    const Config& config = Config())
      : hub_(std::make_shared<FakeHub>(2, kPatience)) {
    for (int rank = 0; rank < 2; ++rank) {
      Topology topology;
      topology.rank = rank;
      topology.size = 2;
      topology.local_rank = rank;
      topology.local_size = 2;
      runtimes_[rank] = std::make_unique<Runtime>(
          config, topology, std::make_unique<FakeTransport>(hub_, rank), make_ops(rank));
    }
  }
  Runtime& operator[](int rank) { return *runtimes_[rank]; }

 private:
  std::shared_ptr<FakeHub> hub_;
  std::unique_ptr<Runtime> runtimes_[2];
};

// Queues `request` on `tensor` (in place) with `outcome`'s callback.
inline Status Submit(Runtime& runtime, Request request, Outcome* outcome,
                     std::shared_ptr<Tensor> tensor) {
  TensorEntry entry;
  entry.name = request.name;
  entry.input = tensor;
  entry.output = std::move(tensor);
  entry.callback = outcome->callback();
  return runtime.Enqueue(std::move(request), std::move(entry));
}

}  // namespace testing
}  // namespace horde

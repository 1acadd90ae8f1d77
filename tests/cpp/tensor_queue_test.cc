#include "core/tensor_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace horde {
namespace {

Request Named(const std::string& name) {
  Request r;
  r.name = name;
  return r;
}

TensorEntry EntryNamed(const std::string& name) {
  TensorEntry e;
  e.name = name;
  return e;
}

Status AddAll(TensorQueue* queue, const std::vector<std::string>& names) {
  std::vector<Request> requests;
  std::vector<TensorEntry> entries;
  for (const auto& name : names) {
    requests.push_back(Named(name));
    entries.push_back(EntryNamed(name));
  }
  return queue->Add(&requests, &entries);
}

std::vector<Request> NewRequests(TensorQueue* queue) {
  std::vector<Request> out;
  queue->TakeNewRequests(&out);
  return out;
}

Status Add(TensorQueue* queue, const std::string& name) { return AddAll(queue, {name}); }

std::vector<std::string> NamesOf(const std::vector<TensorEntry>& entries) {
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name);
  return names;
}

// The names of the entries TakeEntries() gives for `names`.
std::vector<std::string> Take(TensorQueue* queue, const std::vector<std::string>& names) {
  std::vector<TensorEntry> out;
  queue->TakeEntries(names, &out);
  return NamesOf(out);
}

TEST(TensorQueue, AddsSeveralOperationsAllOrNone) {
  TensorQueue queue;
  ASSERT_TRUE(Add(&queue, "busy").ok());
  EXPECT_EQ(AddAll(&queue, {"a", "busy", "b"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(AddAll(&queue, {"c", "c"}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NewRequests(&queue).size(), 1u) << "neither failed batch may leave a trace";
  ASSERT_TRUE(AddAll(&queue, {"a", "b"}).ok());
  EXPECT_EQ(Take(&queue, {"a", "b", "busy"}), (std::vector<std::string>{"a", "b", "busy"}));
}

TEST(TensorQueue, AFailedBatchGivesItsEntriesBackToTheCaller) {
  TensorQueue queue;
  ASSERT_TRUE(Add(&queue, "busy").ok());
  std::vector<Request> requests = {Named("a"), Named("busy")};
  std::vector<TensorEntry> entries = {EntryNamed("a"), EntryNamed("second busy")};
  EXPECT_EQ(queue.Add(&requests, &entries).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NamesOf(entries), (std::vector<std::string>{"a", "second busy"}));
  EXPECT_EQ(Take(&queue, {"a", "busy"}), std::vector<std::string>{"busy"});
}

TEST(TensorQueue, NamesAreReusedAfterCompletionRoundAfterRound) {
  TensorQueue queue;  // the second round onwards reuses the first round's map nodes
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(AddAll(&queue, {"x", "a name longer than sixteen characters"}).ok());
    EXPECT_EQ(NewRequests(&queue).size(), 2u);
    EXPECT_EQ(Take(&queue, {"a name longer than sixteen characters", "x"}),
              (std::vector<std::string>{"a name longer than sixteen characters", "x"}));
    EXPECT_TRUE(Take(&queue, {"x"}).empty());
  }
}

TEST(TensorQueue, RejectsADuplicateNameWhileInFlight) {
  TensorQueue queue;
  ASSERT_TRUE(Add(&queue, "grad").ok());
  Status s = Add(&queue, "grad");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'grad' is already in flight"), std::string::npos) << s.message();
  // Only the first was queued for negotiation.
  EXPECT_EQ(NewRequests(&queue).size(), 1u);

  // Once it has completed, the name is free again.
  EXPECT_EQ(Take(&queue, {"grad"}), std::vector<std::string>{"grad"});
  EXPECT_TRUE(Add(&queue, "grad").ok());
}

TEST(TensorQueue, NewRequestsAreTakenOnceInSubmissionOrder) {
  TensorQueue queue;
  for (const char* name : {"c", "a", "b"}) ASSERT_TRUE(Add(&queue, name).ok());
  std::vector<std::string> names;
  for (const auto& r : NewRequests(&queue)) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"c", "a", "b"}));
  EXPECT_TRUE(NewRequests(&queue).empty());
}

TEST(TensorQueue, TakeEntriesFollowsTheGivenOrderAndSkipsUnknownNames) {
  TensorQueue queue;
  for (const char* name : {"a", "b", "c"}) ASSERT_TRUE(Add(&queue, name).ok());
  EXPECT_EQ(Take(&queue, {"c", "unknown", "a"}), (std::vector<std::string>{"c", "a"}));
  // Taken entries are gone; "b" is still there.
  EXPECT_TRUE(Take(&queue, {"a", "c"}).empty());
  EXPECT_EQ(Take(&queue, {"b"}), std::vector<std::string>{"b"});
}

TEST(TensorQueue, CloseReturnsPendingEntriesAndRefusesLaterAdds) {
  TensorQueue queue;
  ASSERT_TRUE(Add(&queue, "x").ok());
  ASSERT_TRUE(Add(&queue, "y").ok());
  NewRequests(&queue);  // "x" and "y" are now in negotiation, still pending
  ASSERT_TRUE(Add(&queue, "z").ok());

  std::vector<std::string> closed = NamesOf(queue.Close(Status::Aborted("horde has shut down")));
  std::sort(closed.begin(), closed.end());
  EXPECT_EQ(closed, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_TRUE(NewRequests(&queue).empty());

  Status s = Add(&queue, "late");
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "horde has shut down");
  EXPECT_TRUE(NewRequests(&queue).empty());
  EXPECT_TRUE(Take(&queue, {"late"}).empty());
}

TEST(TensorQueue, WaitForWorkReturnsOnAddOrWake) {
  TensorQueue queue;
  const auto kLong = std::chrono::seconds(20);
  auto start = std::chrono::steady_clock::now();
  std::thread adder([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(Add(&queue, "work").ok());
  });
  queue.WaitForWork(kLong);
  adder.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(NewRequests(&queue).size(), 1u);

  start = std::chrono::steady_clock::now();
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    queue.Wake();
  });
  queue.WaitForWork(kLong);
  waker.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(TensorQueue, WaitForWorkTimesOutWhenIdle) {
  TensorQueue queue;
  auto start = std::chrono::steady_clock::now();
  queue.WaitForWork(std::chrono::milliseconds(30));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
}

}  // namespace
}  // namespace horde

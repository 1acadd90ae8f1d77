#include "core/timeline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "tests/cpp/allocation_probe.h"
#include "tests/cpp/json_reader.h"
#include "tests/temp_dir.h"

namespace horde {
namespace {

using testing::JsonValue;

// One operation as a tensor's row shows it: the outer event and its phases, in order.
struct Operation {
  std::string label;
  std::vector<std::string> phases;
};

// What a timeline file holds, read back and checked: valid JSON, every row's B/E events
// nested (an operation holding phases, phases holding nothing) with times that never go
// back; a malformed file fails the test.
struct Trace {
  std::map<std::string, std::vector<Operation>> operations;  // by tensor name
  int cycle_marks = 0;
  int64_t dropped = -1;  // DROPPED_EVENTS' count
};

// In a directory of this test process's own, removed when the process exits.
std::string TempPath(const std::string& name) {
  static const test::TempDir dir;
  return dir.File(name + ".json");
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Applies one B or E event to its row's stack of open events.
void ApplyDuration(const JsonValue& event, const std::string& tensor,
                   std::vector<Operation>* operations, int* depth) {
  if (event.At("ph").string == "B") {
    const std::string& label = event.At("name").string;
    ASSERT_LT(*depth, 2) << tensor << ": '" << label << "' opened inside a phase";
    if (*depth == 0) operations->push_back({label, {}});
    if (*depth == 1) operations->back().phases.push_back(label);
    ++*depth;
  } else {
    ASSERT_GT(*depth, 0) << tensor << ": an end event with nothing open";
    --*depth;
  }
}

Trace ReadTrace(const std::string& path) {
  Trace trace;
  JsonValue root;
  std::string error;
  bool parsed = ParseJson(ReadFile(path), &root, &error);
  EXPECT_TRUE(parsed) << path << " is not valid JSON: " << error;
  EXPECT_EQ(root.type, JsonValue::Type::kArray);
  std::map<int, std::string> tensor_of_tid;
  std::map<int, int> depth_of_tid;
  std::map<int, double> last_ts_of_tid;
  for (const JsonValue& event : root.array) {
    const std::string& ph = event.At("ph").string;
    int tid = event.Has("tid") ? static_cast<int>(event.At("tid").number) : 0;
    if (ph == "M" && event.At("name").string == "thread_name") {
      tensor_of_tid[tid] = event.At("args").At("name").string;
    } else if (ph == "i" && event.At("name").string == "CYCLE_START") {
      ++trace.cycle_marks;
    } else if (ph == "i" && event.At("name").string == "DROPPED_EVENTS") {
      trace.dropped = static_cast<int64_t>(event.At("args").At("count").number);
    } else if (ph == "B" || ph == "E") {
      EXPECT_TRUE(tensor_of_tid.count(tid)) << "row " << tid << " used before it was named";
      double ts = event.At("ts").number;
      EXPECT_GE(ts, last_ts_of_tid[tid]) << "time went back on " << tensor_of_tid[tid];
      last_ts_of_tid[tid] = ts;
      const std::string& tensor = tensor_of_tid[tid];
      ApplyDuration(event, tensor, &trace.operations[tensor], &depth_of_tid[tid]);
    }
  }
  for (const auto& entry : depth_of_tid) {
    EXPECT_EQ(entry.second, 0) << tensor_of_tid[entry.first] << " has events never closed";
  }
  return trace;
}

Timeline::Clock::time_point Now() { return Timeline::Clock::now(); }
// The round that takes a request and decides it, in tests without waiting.
const Timeline::Clock::time_point kSameRound{};

const std::vector<std::string> kAllreducePhases = {"NEGOTIATE", "QUEUE", "MEMCPY_IN_FUSION_BUFFER",
                                                   "MPI_ALLREDUCE", "MEMCPY_OUT_FUSION_BUFFER"};

// One fused allreduce of `names` through every phase, as the runtime records it.
void RecordFusedAllreduce(Timeline* timeline, const std::vector<std::string>& names) {
  for (const auto& name : names)
    timeline->NegotiateStart(name, OpType::kAllreduce, Now(), kSameRound);
  for (const auto& name : names) timeline->NegotiateEnd(name, kSameRound);
  timeline->ActivityStart(names, "QUEUE");
  timeline->ActivityStart(names, "MEMCPY_IN_FUSION_BUFFER");
  timeline->ActivityStart(names, "MPI_ALLREDUCE");
  timeline->ActivityStart(names, "MEMCPY_OUT_FUSION_BUFFER");
  timeline->ActivityEnd(names);
  for (const auto& name : names) timeline->End(name);
}

TEST(Timeline, NestsEveryPhaseInItsOperationPerTensorFromSeveralThreads) {
  const std::string path = TempPath("threads");
  Timeline timeline;
  ASSERT_TRUE(timeline.Start(path, /*mark_cycles=*/true).ok());
  EXPECT_TRUE(timeline.active());
  constexpr int kThreads = 4;
  constexpr int kOperations = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&timeline, t] {
      std::vector<std::string> names = {"t" + std::to_string(t) + ".a",
                                        "t" + std::to_string(t) + ".b"};
      for (int i = 0; i < kOperations; ++i) {
        RecordFusedAllreduce(&timeline, names);
        timeline.NegotiateStart("t" + std::to_string(t) + ".bcast", OpType::kBroadcast, Now(),
                                kSameRound);
        timeline.NegotiateEnd("t" + std::to_string(t) + ".bcast", kSameRound);
        timeline.ActivityStart({"t" + std::to_string(t) + ".bcast"}, "MPI_BCAST");
        timeline.End("t" + std::to_string(t) + ".bcast");  // closes the open phase too
        timeline.MarkCycle();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(timeline.Stop().ok());
  EXPECT_FALSE(timeline.active());

  Trace trace = ReadTrace(path);
  EXPECT_EQ(trace.dropped, 0);
  EXPECT_EQ(trace.cycle_marks, kThreads * kOperations);
  ASSERT_EQ(trace.operations.size(), 3u * kThreads);
  for (int t = 0; t < kThreads; ++t) {
    for (const char* suffix : {".a", ".b"}) {
      const auto& operations = trace.operations["t" + std::to_string(t) + suffix];
      ASSERT_EQ(operations.size(), size_t{kOperations});
      for (const Operation& op : operations) {
        EXPECT_EQ(op.label, "ALLREDUCE");
        EXPECT_EQ(op.phases, kAllreducePhases);
      }
    }
    const auto& broadcasts = trace.operations["t" + std::to_string(t) + ".bcast"];
    ASSERT_EQ(broadcasts.size(), size_t{kOperations});
    EXPECT_EQ(broadcasts[0].label, "BROADCAST");
    EXPECT_EQ(broadcasts[0].phases, (std::vector<std::string>{"NEGOTIATE", "MPI_BCAST"}));
  }
}

TEST(Timeline, ANegotiationDecidedInALaterRoundWaitedForTheOtherRanksUntilThen) {
  const std::string path = TempPath("waiting");
  Timeline timeline;
  ASSERT_TRUE(timeline.Start(path, false).ok());
  const auto submitted = Now();
  const auto taken = submitted + std::chrono::milliseconds(1);
  const auto deciding = submitted + std::chrono::milliseconds(30);
  timeline.NegotiateStart("late", OpType::kAllreduce, submitted, taken);
  timeline.NegotiateStart("prompt", OpType::kAllreduce, submitted, taken);
  std::this_thread::sleep_until(deciding + std::chrono::milliseconds(5));
  timeline.NegotiateEnd("late", deciding);
  timeline.NegotiateEnd("prompt", taken);
  timeline.End("late");
  timeline.End("prompt");
  timeline.Note("REPORT", "{\"straggler\":1}");
  ASSERT_TRUE(timeline.Stop().ok());

  Trace trace = ReadTrace(path);
  ASSERT_EQ(trace.operations["late"].size(), 1u);
  EXPECT_EQ(trace.operations["late"][0].phases,
            (std::vector<std::string>{"WAITING_FOR_RANKS", "NEGOTIATE"}));
  EXPECT_EQ(trace.operations["prompt"][0].phases, (std::vector<std::string>{"NEGOTIATE"}));
  // The wait ends where the deciding round began: 30 ms after the submission.
  JsonValue root;
  std::string error;
  ASSERT_TRUE(ParseJson(ReadFile(path), &root, &error)) << error;
  std::vector<double> begins;
  bool noted = false;
  for (const JsonValue& event : root.array) {
    if (event.At("ph").string == "B") begins.push_back(event.At("ts").number);
    if (event.At("ph").string == "i" && event.At("name").string == "REPORT") {
      noted = event.At("args").At("straggler").number == 1;
    }
  }
  // In the file: both ALLREDUCEs, then "late"'s WAITING_FOR_RANKS and NEGOTIATE.
  ASSERT_GE(begins.size(), 4u);
  EXPECT_EQ(begins[3] - begins[2], 30000);
  EXPECT_TRUE(noted);
}

TEST(Timeline, CycleMarksOnlyWhenAskedFor) {
  const std::string path = TempPath("no_marks");
  Timeline timeline;
  ASSERT_TRUE(timeline.Start(path, /*mark_cycles=*/false).ok());
  timeline.MarkCycle();
  RecordFusedAllreduce(&timeline, {"x"});
  ASSERT_TRUE(timeline.Stop().ok());
  Trace trace = ReadTrace(path);
  EXPECT_EQ(trace.cycle_marks, 0);
  ASSERT_EQ(trace.operations["x"].size(), 1u);
}

TEST(Timeline, EscapesNamesSoTheFileStaysValidJson) {
  const std::string path = TempPath("escapes");
  const std::string name = "grad \"fc\\1\"\n\tlayer";
  Timeline timeline;
  ASSERT_TRUE(timeline.Start(path, false).ok());
  RecordFusedAllreduce(&timeline, {name});
  ASSERT_TRUE(timeline.Stop().ok());
  Trace trace = ReadTrace(path);
  ASSERT_EQ(trace.operations.count(name), 1u) << ReadFile(path);
  EXPECT_EQ(trace.operations[name][0].phases, kAllreducePhases);
}

// With room for one event, a row's name fits but no operation (it needs room for its
// end as well): every operation is dropped, deterministically, and counted.
TEST(Timeline, DropsAndCountsWhatDoesNotFitInTheQueue) {
  const std::string path = TempPath("full");
  Timeline timeline(/*queue_capacity=*/1);
  ASSERT_TRUE(timeline.Start(path, true).ok());
  for (int i = 0; i < 10; ++i) RecordFusedAllreduce(&timeline, {"x"});
  EXPECT_EQ(timeline.dropped_events(), 10);
  ASSERT_TRUE(timeline.Stop().ok());
  Trace trace = ReadTrace(path);
  EXPECT_EQ(trace.dropped, 10);
  EXPECT_TRUE(trace.operations.empty());
}

// A small queue under load: what is written still nests, and every operation missing
// from the file is counted (how many get through depends on the writer's timing).
TEST(Timeline, ASmallQueueUnderLoadWritesOnlyWholeOperations) {
  const std::string path = TempPath("small");
  Timeline timeline(/*queue_capacity=*/16);
  ASSERT_TRUE(timeline.Start(path, true).ok());
  constexpr int kOperations = 2000;
  for (int i = 0; i < kOperations; ++i) {
    RecordFusedAllreduce(&timeline, {"x", "y"});
    timeline.MarkCycle();
  }
  ASSERT_TRUE(timeline.Stop().ok());
  Trace trace = ReadTrace(path);
  EXPECT_GE(trace.dropped, 0);
  for (const char* name : {"x", "y"}) {
    EXPECT_GE(static_cast<int64_t>(trace.operations[name].size()) + trace.dropped, kOperations)
        << name;
  }
}

TEST(Timeline, LimitsTheNumberOfRowsAndCountsTheRest) {
  const std::string path = TempPath("rows");
  Timeline timeline(Timeline::kDefaultQueueCapacity, /*max_rows=*/2);
  ASSERT_TRUE(timeline.Start(path, false).ok());
  RecordFusedAllreduce(&timeline, {"a", "b", "c"});
  ASSERT_TRUE(timeline.Stop().ok());
  Trace trace = ReadTrace(path);
  EXPECT_EQ(trace.operations.size(), 2u);
  EXPECT_EQ(trace.operations.count("c"), 0u);
  EXPECT_EQ(trace.dropped, 1);  // c's row; its later events have no operation to join
}

TEST(Timeline, StopClosesWhatIsOpenAndStartsAgainInANewFile) {
  const std::string first = TempPath("first");
  const std::string second = TempPath("second");
  Timeline timeline;
  ASSERT_TRUE(timeline.Start(first, false).ok());
  RecordFusedAllreduce(&timeline, {"done"});
  timeline.NegotiateStart("open", OpType::kAllgather, Now(), kSameRound);
  timeline.NegotiateEnd("open", kSameRound);
  timeline.ActivityStart({"open"}, "QUEUE");
  ASSERT_TRUE(timeline.Stop().ok());
  EXPECT_TRUE(timeline.Stop().ok()) << "stopping twice is harmless";
  timeline.End("open");  // after Stop: ignored

  ASSERT_TRUE(timeline.Start(second, false).ok());
  timeline.ActivityStart({"open"}, "MPI_ALLGATHER");  // began before this Start: ignored
  timeline.End("open");
  RecordFusedAllreduce(&timeline, {"later"});
  ASSERT_TRUE(timeline.Stop().ok());

  Trace one = ReadTrace(first);
  EXPECT_EQ(one.operations["done"].size(), 1u);
  ASSERT_EQ(one.operations["open"].size(), 1u);
  EXPECT_EQ(one.operations["open"][0].label, "ALLGATHER");
  EXPECT_EQ(one.operations["open"][0].phases, (std::vector<std::string>{"NEGOTIATE", "QUEUE"}));
  EXPECT_EQ(one.operations.count("later"), 0u);
  Trace two = ReadTrace(second);
  EXPECT_EQ(two.operations.count("done"), 0u);
  EXPECT_TRUE(two.operations["open"].empty());
  EXPECT_EQ(two.operations["later"].size(), 1u);
}

TEST(Timeline, StartingWhileStartedFinishesTheFirstFileAndSwitches) {
  const std::string first = TempPath("switch_first");
  const std::string second = TempPath("switch_second");
  Timeline timeline;
  ASSERT_TRUE(timeline.Start(first, false).ok());
  timeline.NegotiateStart("x", OpType::kAllreduce, Now(), kSameRound);
  ASSERT_TRUE(timeline.Start(second, false).ok());
  EXPECT_TRUE(timeline.active());
  RecordFusedAllreduce(&timeline, {"x"});
  ASSERT_TRUE(timeline.Stop().ok());
  Trace one = ReadTrace(first);
  ASSERT_EQ(one.operations["x"].size(), 1u);
  EXPECT_EQ(one.operations["x"][0].phases, (std::vector<std::string>{"NEGOTIATE"}));
  EXPECT_EQ(ReadTrace(second).operations["x"].size(), 1u);
}

TEST(Timeline, AnUnwritablePathIsAnErrorNamingIt) {
  const std::string bad = TempPath("no_such_directory/timeline");
  Timeline timeline;
  Status status = timeline.Start(bad, false);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cannot open '" + bad + "' for writing"), std::string::npos)
      << status.message();
  EXPECT_FALSE(timeline.active());
  RecordFusedAllreduce(&timeline, {"x"});  // harmless while stopped
  EXPECT_TRUE(timeline.Stop().ok());

  const std::string good = TempPath("after_error");
  ASSERT_TRUE(timeline.Start(good, false).ok());
  RecordFusedAllreduce(&timeline, {"x"});
  ASSERT_TRUE(timeline.Stop().ok());
  EXPECT_EQ(ReadTrace(good).operations["x"].size(), 1u);
}

TEST(Timeline, RecordingWhileInactiveAllocatesNothing) {
  Timeline timeline;
  const std::string name = "a gradient name long enough to live on the heap";
  const std::vector<std::string> names = {name, name + " too"};
  const std::string activity = "MPI_ALLREDUCE";
  auto record = [&] {
    timeline.NegotiateStart(name, OpType::kAllreduce, Now(), kSameRound);
    timeline.NegotiateEnd(name, kSameRound);
    timeline.ActivityStart(names, activity);
    timeline.ActivityEnd(names);
    timeline.End(name);
    timeline.MarkCycle();
  };
  EXPECT_EQ(testing::LargestAllocationDuring(record), 0u) << "never started";
  ASSERT_TRUE(timeline.Start(TempPath("inactive"), false).ok());
  ASSERT_TRUE(timeline.Stop().ok());
  EXPECT_EQ(testing::LargestAllocationDuring(record), 0u) << "stopped";
}

}  // namespace
}  // namespace horde

// core/api.cc's RebuildRuntimes: the in-place re-forming of the job after a lost rank,
// driven through its JobReform (which MPI fills in mpi_ops/job_communicator.cc) on a job
// of one rank over the fake transport.

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/op_registry.h"
#include "tests/cpp/fake_transport.h"

namespace horde {
namespace {

std::unique_ptr<Runtime> OneRankRuntime(const Config& config) {
  Topology topology;
  return std::make_unique<Runtime>(
      config, topology,
      std::make_unique<testing::FakeTransport>(std::make_shared<testing::FakeHub>(1), 0),
      std::make_unique<OpRegistry>());
}

Status MakeGlobal(const Status& parsed, const Config& config, std::unique_ptr<Runtime>* out) {
  HORDE_RETURN_IF_ERROR(parsed);
  *out = OneRankRuntime(config);
  return Status::Ok();
}

Status MakeSet(const Config& config, const std::vector<int>&, std::unique_ptr<Runtime>* out) {
  *out = OneRankRuntime(config);
  return Status::Ok();
}

// A re-forming whose first `failing_shrinks` shrinks fail (a rank died during them) and
// whose first `failing_agreements` agreements fail (a rank died as the job re-formed).
struct ScriptedReform {
  int failing_shrinks = 0;
  int failing_agreements = 0;
  int shrinks = 0;
  JobReform reform() {
    JobReform out;
    out.interrupt = [] {};
    out.shrink = [this](std::vector<int>* previous) {
      if (shrinks++ < failing_shrinks) return Status::Internal("a rank failed during the shrink");
      *previous = {0};
      return Status::Ok();
    };
    out.agree = [this](bool ok) { return ok && failing_agreements-- <= 0; };
    return out;
  }
};

class RebuildRuntimesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<int32_t> ids;
    Status started = InitRuntime(MakeGlobal, {{0}}, MakeSet, &ids);
    ASSERT_TRUE(started.ok()) << started.message();
    ASSERT_EQ(ids, std::vector<int32_t>{1});
  }
  void TearDown() override { ShutdownRuntime(); }

  // After a failed re-forming: horde is stopped, and the next one brings set 1 back.
  void ExpectTheNextReformingKeepsTheSet(ScriptedReform* scripted, const Status& failed,
                                         const std::string& cause) {
    ASSERT_FALSE(failed.ok()) << "the re-forming should have failed";
    EXPECT_NE(failed.message().find(cause), std::string::npos) << failed.message();
    EXPECT_NE(failed.message().find("the process sets are kept"), std::string::npos)
        << failed.message();
    EXPECT_EQ(CurrentRuntime(), nullptr) << "a failed re-forming left a runtime running";

    *scripted = ScriptedReform();
    std::map<int32_t, std::vector<int>> sets;
    Status again = RebuildRuntimes(scripted->reform(), MakeGlobal, MakeSet, &sets);
    ASSERT_TRUE(again.ok()) << again.message();
    const std::map<int32_t, std::vector<int>> expected = {{1, {0}}};
    EXPECT_EQ(sets, expected) << "process set 1 did not survive the failed re-forming";
    std::shared_ptr<Runtime> runtime;
    std::vector<int> ranks;
    Status found = FindProcessSet(1, &runtime, &ranks);
    EXPECT_TRUE(found.ok()) << found.message();
    EXPECT_EQ(ranks, std::vector<int>{0});
    ASSERT_NE(CurrentRuntime(), nullptr);
  }
};

TEST_F(RebuildRuntimesTest, RenumbersTheSetsOverTheLiveRanks) {
  ScriptedReform scripted;
  std::map<int32_t, std::vector<int>> sets;
  Status rebuilt = RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.message();
  const std::map<int32_t, std::vector<int>> expected = {{1, {0}}};
  EXPECT_EQ(sets, expected);
}

TEST_F(RebuildRuntimesTest, AFailedShrinkKeepsTheSetsForTheNextReforming) {
  ScriptedReform scripted;
  scripted.failing_shrinks = 1;
  std::map<int32_t, std::vector<int>> sets;
  Status failed = RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets);
  ExpectTheNextReformingKeepsTheSet(&scripted, failed, "a rank failed during the shrink");
}

TEST_F(RebuildRuntimesTest, RanksFailingInEveryAttemptKeepTheSetsForTheNextReforming) {
  ScriptedReform scripted;
  scripted.failing_agreements = 100;
  std::map<int32_t, std::vector<int>> sets;
  Status failed = RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets);
  ExpectTheNextReformingKeepsTheSet(&scripted, failed, "a rank failed while the job re-formed");
}

TEST_F(RebuildRuntimesTest, AShutdownForgetsAFailedReforming) {
  ScriptedReform scripted;
  scripted.failing_shrinks = 1;
  std::map<int32_t, std::vector<int>> sets;
  ASSERT_FALSE(RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets).ok());
  ShutdownRuntime();
  std::vector<int32_t> ids;
  Status started = InitRuntime(MakeGlobal, {}, MakeSet, &ids);
  ASSERT_TRUE(started.ok()) << started.message();
  scripted = ScriptedReform();
  Status rebuilt = RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.message();
  EXPECT_TRUE(sets.empty()) << "the sets of the job before the shutdown came back";
}

}  // namespace
}  // namespace horde

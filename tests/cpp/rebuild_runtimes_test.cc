// core/api.cc's RebuildRuntimes: the in-place re-forming of the job after a lost rank,
// driven through its JobReform (which MPI fills in mpi_ops/job_communicator.cc). This
// process is rank 0 of a job of 2 whose rank 1 is lost; every runtime runs alone over
// the fake transport (the registry only needs their topology).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/op_registry.h"
#include "tests/cpp/fake_transport.h"

namespace horde {
namespace {

int g_job_size = 2;  // the size of the job the next global runtime belongs to

std::unique_ptr<Runtime> RankZeroRuntime(const Config& config, int size) {
  Topology topology;
  topology.size = size;
  return std::make_unique<Runtime>(
      config, topology,
      std::make_unique<testing::FakeTransport>(std::make_shared<testing::FakeHub>(1), 0),
      std::make_unique<OpRegistry>());
}

Status MakeGlobal(const Status& parsed, const Config& config, std::unique_ptr<Runtime>* out) {
  HORDE_RETURN_IF_ERROR(parsed);
  *out = RankZeroRuntime(config, g_job_size);
  return Status::Ok();
}

Status MakeSet(const Config& config, const std::vector<int>& ranks, std::unique_ptr<Runtime>* out) {
  if (std::find(ranks.begin(), ranks.end(), 0) != ranks.end()) {
    *out = RankZeroRuntime(config, static_cast<int>(ranks.size()));
  }
  return Status::Ok();
}

// A re-forming that loses rank 1, whose first `failing_shrinks` shrinks fail (a rank died
// during them) and whose first `failing_agreements` agreements fail (a rank died as the
// job re-formed).
struct ScriptedReform {
  int failing_shrinks = 0;
  int failing_agreements = 0;
  int shrinks = 0;
  JobReform reform() {
    JobReform out;
    out.interrupt = [] {};
    out.shrink = [this](std::vector<int>* previous) {
      if (shrinks++ < failing_shrinks) return Status::Internal("a rank failed during the shrink");
      *previous = {0};  // rank 0 of the job before is rank 0 now; rank 1 is gone
      g_job_size = 1;
      return Status::Ok();
    };
    out.agree = [this](bool ok) { return ok && failing_agreements-- <= 0; };
    return out;
  }
};

// After the re-forming: the set {0} keeps its id `kept`, the set {1} (id `lost`) is gone.
void ExpectRenumbered(const std::map<int32_t, std::vector<int>>& sets, int32_t kept, int32_t lost) {
  const std::map<int32_t, std::vector<int>> expected = {{kept, {0}}};
  EXPECT_EQ(sets, expected) << "expected only process set " << kept << ", over rank 0";
  std::shared_ptr<Runtime> runtime;
  std::vector<int> ranks;
  Status found = FindProcessSet(kept, &runtime, &ranks);
  EXPECT_TRUE(found.ok()) << found.message();
  EXPECT_EQ(ranks, std::vector<int>{0});
  EXPECT_FALSE(FindProcessSet(lost, &runtime, &ranks).ok()) << "set {1} lost its only rank";
  ASSERT_NE(CurrentRuntime(), nullptr);
  EXPECT_EQ(CurrentRuntime()->topology().size, 1);
}

class RebuildRuntimesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_job_size = 2;
    Status started = InitRuntime(MakeGlobal, {{0}, {1}}, MakeSet, &ids_);
    ASSERT_TRUE(started.ok()) << started.message();
    ASSERT_EQ(ids_.size(), 2u);
  }
  void TearDown() override { ShutdownRuntime(); }

  // After a failed re-forming: horde is stopped, and the next one renumbers the sets as
  // if the first had not failed.
  void ExpectTheNextReformingKeepsTheSets(ScriptedReform* scripted, const Status& failed,
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
    ExpectRenumbered(sets, ids_[0], ids_[1]);
  }

  std::vector<int32_t> ids_;  // of the sets {0} and {1}
};

TEST_F(RebuildRuntimesTest, RenumbersTheSetsOverTheLiveRanks) {
  ScriptedReform scripted;
  std::map<int32_t, std::vector<int>> sets;
  Status rebuilt = RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets);
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.message();
  ExpectRenumbered(sets, ids_[0], ids_[1]);
}

TEST_F(RebuildRuntimesTest, AFailedShrinkKeepsTheSetsForTheNextReforming) {
  ScriptedReform scripted;
  scripted.failing_shrinks = 1;
  std::map<int32_t, std::vector<int>> sets;
  Status failed = RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets);
  ExpectTheNextReformingKeepsTheSets(&scripted, failed, "a rank failed during the shrink");
}

TEST_F(RebuildRuntimesTest, RanksFailingInEveryAttemptKeepTheSetsForTheNextReforming) {
  ScriptedReform scripted;
  scripted.failing_agreements = 100;
  std::map<int32_t, std::vector<int>> sets;
  Status failed = RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets);
  ExpectTheNextReformingKeepsTheSets(&scripted, failed, "a rank failed while the job re-formed");
}

TEST_F(RebuildRuntimesTest, AShutdownForgetsAFailedReforming) {
  ScriptedReform scripted;
  scripted.failing_shrinks = 1;
  std::map<int32_t, std::vector<int>> sets;
  ASSERT_FALSE(RebuildRuntimes(scripted.reform(), MakeGlobal, MakeSet, &sets).ok());
  ShutdownRuntime();
  g_job_size = 2;
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

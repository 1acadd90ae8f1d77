// Settings that ranks must share (core/shared_config.h): every rank runs with rank 0's
// values and the difference is logged; a malformed value on one rank fails init() on
// every rank; per-rank settings stay per rank.
#include "core/shared_config.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/cpp/fake_transport.h"
#include "tests/cpp/other_setting_value.h"

namespace horde {
namespace {

using Env = std::map<std::string, std::string>;

struct Agreed {
  std::vector<Status> status;
  std::vector<Config> config;
  std::string log;
};

BuildIdentity SameBuild(int rank) {
  return BuildIdentity{"0.1.0", 2, "none", "node" + std::to_string(rank)};
}

// Each rank parses its own environment and agrees with the others; `build` gives each
// rank's build (by default the same everywhere, on hosts node0, node1, ...).
Agreed Agree(const std::vector<Env>& envs,
             const std::function<BuildIdentity(int rank)>& build = SameBuild) {
  const int size = static_cast<int>(envs.size());
  auto hub = std::make_shared<testing::FakeHub>(size);
  Agreed agreed{std::vector<Status>(size), std::vector<Config>(size), ""};
  ::testing::internal::CaptureStderr();
  testing::RunOnRanks(size, [&](int rank) {
    const Env& env = envs[rank];
    Config config;
    const Status parsed = Config::FromEnv(
        [&env](const std::string& name) -> std::optional<std::string> {
          auto it = env.find(name);
          return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
        },
        &config);
    testing::FakeTransport transport(hub, rank);
    agreed.status[rank] = AgreeOnConfig(&transport, build(rank), parsed, &config);
    agreed.config[rank] = config;
  });
  agreed.log = ::testing::internal::GetCapturedStderr();
  return agreed;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SharedConfig, EveryRankUsesRankZerosFusionAndCacheAndTheLogSaysSo) {
  Agreed agreed = Agree({{{"HORDE_FUSION_THRESHOLD", "0"}, {"HORDE_CACHE_CAPACITY", "4"}}, {}, {}});
  for (int rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(agreed.status[rank].ok()) << agreed.status[rank].message();
    EXPECT_EQ(agreed.config[rank].fusion_threshold_bytes, 0) << "rank " << rank;
    EXPECT_EQ(agreed.config[rank].cache_capacity, 4) << "rank " << rank;
  }
  const std::string line =
      "HORDE_FUSION_THRESHOLD differs across ranks (0 on rank 0; 134217728 on ranks 1,2); every "
      "rank uses "
      "rank 0's value, 0: ranks with different values would not issue the same collectives";
  // Rank 0 and both ranks whose value differs say so.
  size_t count = 0;
  for (size_t at = agreed.log.find(line); at != std::string::npos;
       at = agreed.log.find(line, at + 1))
    ++count;
  EXPECT_EQ(count, 3u) << agreed.log;
  EXPECT_TRUE(Contains(
      agreed.log, "HORDE_CACHE_CAPACITY differs across ranks (1024 on ranks 1,2; 4 on rank 0)"))
      << agreed.log;
}

TEST(SharedConfig, EverySharedSettingTakesRankZerosValue) {
  const Env different = {{"HORDE_FUSION_THRESHOLD", "5"},
                         {"HORDE_CACHE_CAPACITY", "3"},
                         {"HORDE_CYCLE_TIME", "2.5"},
                         {"HORDE_AUTOTUNE", "1"},
                         {"HORDE_GPU_OPERATIONS", "MPI"},
                         {"HORDE_HIERARCHICAL_ALLREDUCE", "1"},
                         {"HORDE_STALL_CHECK_TIME_SECONDS", "7"},
                         {"HORDE_STALL_SHUTDOWN_TIME_SECONDS", "0.5"},
                         {"HORDE_STALL_CHECK_DISABLE", "1"},
                         {"HORDE_DYNAMIC_PROCESS_SETS", "1"}};
  for (const auto& [variable, value] : different) {
    Agreed agreed = Agree({{}, {{variable, value}}});
    ASSERT_TRUE(agreed.status[1].ok()) << variable;
    const Config& mine = agreed.config[1];
    const Config defaults;
    EXPECT_EQ(mine.fusion_threshold_bytes, defaults.fusion_threshold_bytes) << variable;
    EXPECT_EQ(mine.cache_capacity, defaults.cache_capacity) << variable;
    EXPECT_EQ(mine.cycle_time_ms, defaults.cycle_time_ms) << variable;
    EXPECT_EQ(mine.autotune, defaults.autotune) << variable;
    EXPECT_EQ(mine.gpu_operations_nccl, defaults.gpu_operations_nccl) << variable;
    EXPECT_EQ(mine.hierarchical_allreduce, defaults.hierarchical_allreduce) << variable;
    EXPECT_EQ(mine.stall.check_seconds, defaults.stall.check_seconds) << variable;
    EXPECT_EQ(mine.stall.shutdown_seconds, defaults.stall.shutdown_seconds) << variable;
    EXPECT_EQ(mine.stall.enabled, defaults.stall.enabled) << variable;
    EXPECT_EQ(mine.dynamic_process_sets, defaults.dynamic_process_sets) << variable;
    EXPECT_TRUE(Contains(agreed.log, variable + " differs across ranks")) << agreed.log;
  }
}

TEST(SharedConfig, RankZerosFractionalValuesArriveExactly) {
  Agreed agreed = Agree(
      {{{"HORDE_CYCLE_TIME", "0.1"}, {"HORDE_STALL_SHUTDOWN_TIME_SECONDS", "2.75"}}, {}});
  EXPECT_EQ(agreed.config[1].cycle_time_ms, 0.1);
  EXPECT_EQ(agreed.config[1].stall.shutdown_seconds, 2.75);
  EXPECT_TRUE(
      Contains(agreed.log, "HORDE_CYCLE_TIME differs across ranks (0.1 on rank 0; 1 on rank 1)"))
      << agreed.log;
}

TEST(SharedConfig, PerRankSettingsStayPerRank) {
  Agreed agreed = Agree({{{"HORDE_LOG_LEVEL", "error"}}, {{"HORDE_TIMELINE", "/tmp/t.json"}}});
  EXPECT_EQ(agreed.config[0].log_level, LogLevel::kError);
  EXPECT_EQ(agreed.config[1].log_level, LogLevel::kWarning);
  EXPECT_EQ(agreed.config[0].timeline_path, "");
  EXPECT_EQ(agreed.config[1].timeline_path, "/tmp/t.json");
  EXPECT_EQ(agreed.log, "") << "nothing shared differs";
}

TEST(SharedConfig, AMalformedValueOnOneRankFailsInitOnEveryRank) {
  Agreed agreed = Agree({{}, {{"HORDE_FUSION_THRESHOLD", "abc"}}, {}});
  const std::string malformed =
      "invalid value 'abc' for HORDE_FUSION_THRESHOLD: expected a non-negative integer";
  EXPECT_EQ(agreed.status[1].message(), malformed) << "the rank itself keeps its own error";
  for (int rank : {0, 2}) {
    EXPECT_EQ(agreed.status[rank].code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(agreed.status[rank].message(),
              "init() failed because another rank's settings are malformed: rank 1: " + malformed);
  }
}

TEST(SharedConfig, RanksWithAnotherBuildFailInitOnEveryRankNamingEachHostAndBuild) {
  // A stale install on one host: an older version with another wire format.
  Agreed agreed = Agree({{}, {}, {}}, [](int rank) {
    BuildIdentity build = SameBuild(rank);
    if (rank == 2) build = BuildIdentity{"0.0.9", 1, "none", "stale-node"};
    return build;
  });
  for (int rank = 0; rank < 3; ++rank) {
    const Status& status = agreed.status[rank];
    ASSERT_EQ(status.code(), StatusCode::kPreconditionError) << "rank " << rank;
    EXPECT_EQ(status.message(),
              "init() failed: the ranks run different horde builds, which cannot exchange "
              "messages (rank 0 on node0: horde 0.1.0, wire format 2, GPU path none; rank 1 on "
              "node1: horde 0.1.0, wire format 2, GPU path none; rank 2 on stale-node: horde "
              "0.0.9, wire format 1, GPU path none); install the same horde on every host")
        << "rank " << rank;
  }
}

TEST(SharedConfig, AnotherGpuPathIsAnotherBuildButAnotherHostIsNot) {
  Agreed same_build = Agree({{}, {}});
  for (const Status& status : same_build.status) EXPECT_TRUE(status.ok()) << status.message();
  Agreed other_gpu = Agree({{}, {}}, [](int rank) {
    BuildIdentity build = SameBuild(rank);
    if (rank == 1) build.gpu_path = "NCCL 22703";
    return build;
  });
  for (const Status& status : other_gpu.status) {
    EXPECT_NE(status.message().find("rank 1 on node1: horde 0.1.0, wire format 2, GPU path NCCL "
                                    "22703"),
              std::string::npos)
        << status.message();
  }
}

TEST(SharedConfig, BuildLinesRoundTripAndGarbageIsNoBuild) {
  const BuildIdentity build{"1.2.3", 7, "NCCL 21903", "host-a"};
  BuildIdentity parsed;
  ASSERT_TRUE(BuildIdentity::Parse(build.Encode(), &parsed));
  EXPECT_EQ(parsed.Summary(), build.Summary());
  EXPECT_EQ(parsed.host, "host-a");
  for (const std::string garbage : {"", "build", "build\t1\tx\tnone\th", "16777216\n0\n"}) {
    EXPECT_FALSE(BuildIdentity::Parse(garbage, &parsed)) << garbage;
  }
}

TEST(SharedConfig, EverySharedRowIsAgreedAndEveryPerRankRowIsNot) {
  for (const Setting& setting : Settings()) {
    const std::string other = testing::OtherSettingValue(setting);
    if (other.empty()) continue;  // nothing to differ in
    const std::string variable = VariableName(setting);
    Agreed agreed = Agree({{}, {{variable, other}}});
    ASSERT_TRUE(agreed.status[1].ok()) << variable << ": " << agreed.status[1].message();
    const bool shared = setting.scope == SettingScope::kShared;
    EXPECT_EQ(SettingText(setting, agreed.config[1]), shared ? setting.default_value : other)
        << variable;
    EXPECT_EQ(Contains(agreed.log, variable + " differs across ranks"), shared) << agreed.log;
  }
}

}  // namespace
}  // namespace horde

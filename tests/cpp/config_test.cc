#include "core/config.h"

#include <gtest/gtest.h>

#include <map>
#include <variant>

#include "tests/cpp/other_setting_value.h"

namespace horde {
namespace {

using Env = std::map<std::string, std::string>;

EnvLookup LookupIn(const Env& env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

Status Parse(const Env& env, Config* config) { return Config::FromEnv(LookupIn(env), config); }

TEST(Config, DefaultsWhenNothingIsSet) {
  Config config;
  config.fusion_threshold_bytes = 7;  // must be overwritten with the default
  ASSERT_TRUE(Parse({}, &config).ok());
  EXPECT_EQ(config.fusion_threshold_bytes, 128 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(config.cycle_time_ms, 1.0);
  EXPECT_EQ(config.log_level, LogLevel::kWarning);
  EXPECT_TRUE(config.stall.enabled);
  EXPECT_DOUBLE_EQ(config.stall.check_seconds, 60.0);
  EXPECT_DOUBLE_EQ(config.stall.shutdown_seconds, 0.0);
  EXPECT_EQ(config.cache_capacity, 1024);
  EXPECT_TRUE(config.timeline_path.empty());
  EXPECT_FALSE(config.timeline_mark_cycles);
}

TEST(Config, ReadsCacheAndTimelineVariables) {
  Config config;
  Status s = Parse({{"HORDE_CACHE_CAPACITY", "0"},
                    {"HOROVOD_TIMELINE", "/tmp/t.json"},
                    {"HORDE_TIMELINE_MARK_CYCLES", "1"}},
                   &config);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(config.cache_capacity, 0);
  EXPECT_EQ(config.timeline_path, "/tmp/t.json");
  Config gpu;
  ASSERT_TRUE(
      Parse({{"HORDE_GPU_OPERATIONS", "MPI"}, {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"}}, &gpu).ok());
  EXPECT_FALSE(gpu.gpu_operations_nccl);
  EXPECT_TRUE(gpu.hierarchical_allreduce);
  EXPECT_TRUE(config.timeline_mark_cycles);
}

TEST(Config, ReadsHordeVariables) {
  Config config;
  Status s = Parse({{"HORDE_FUSION_THRESHOLD", "0"},
                    {"HORDE_CYCLE_TIME", "2.5"},
                    {"HORDE_LOG_LEVEL", "debug"},
                    {"HORDE_CPU_OPERATIONS", "MPI"},
                    {"HORDE_STALL_CHECK_TIME_SECONDS", "0.5"},
                    {"HORDE_STALL_SHUTDOWN_TIME_SECONDS", "30"},
                    {"HORDE_STALL_CHECK_DISABLE", "1"}},
                   &config);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(config.fusion_threshold_bytes, 0);
  EXPECT_DOUBLE_EQ(config.cycle_time_ms, 2.5);
  EXPECT_EQ(config.log_level, LogLevel::kDebug);
  EXPECT_DOUBLE_EQ(config.stall.check_seconds, 0.5);
  EXPECT_DOUBLE_EQ(config.stall.shutdown_seconds, 30.0);
  EXPECT_FALSE(config.stall.enabled);
}

TEST(Config, StallShutdownTimeZeroMeansNeverAndTheCheckCanBeLeftOn) {
  Config config;
  Status s = Parse({{"HORDE_STALL_SHUTDOWN_TIME_SECONDS", "0"}, {"HORDE_STALL_CHECK_DISABLE", "0"}},
                   &config);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_DOUBLE_EQ(config.stall.shutdown_seconds, 0.0);
  EXPECT_TRUE(config.stall.enabled);
}

TEST(Config, AcceptsHorovodAliases) {
  Config config;
  Status s = Parse({{"HOROVOD_FUSION_THRESHOLD", "67108864"},
                    {"HOROVOD_CYCLE_TIME", "5"},
                    {"HOROVOD_LOG_LEVEL", "ERROR"},
                    {"HOROVOD_CPU_OPERATIONS", "mpi"},
                    {"HOROVOD_STALL_CHECK_TIME_SECONDS", "120"},
                    {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "600"},
                    {"HOROVOD_STALL_CHECK_DISABLE", "1"}},
                   &config);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(config.fusion_threshold_bytes, 64 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(config.cycle_time_ms, 5.0);
  EXPECT_EQ(config.log_level, LogLevel::kError);
  EXPECT_DOUBLE_EQ(config.stall.check_seconds, 120.0);
  EXPECT_DOUBLE_EQ(config.stall.shutdown_seconds, 600.0);
  EXPECT_FALSE(config.stall.enabled);
}

TEST(Config, HordeNameWinsOverHorovodAlias) {
  Config config;
  Status s = Parse({{"HORDE_FUSION_THRESHOLD", "1024"},
                    {"HOROVOD_FUSION_THRESHOLD", "2048"},
                    {"HORDE_CYCLE_TIME", "0.5"},
                    {"HOROVOD_CYCLE_TIME", "9"},
                    {"HORDE_LOG_LEVEL", "trace"},
                    {"HOROVOD_LOG_LEVEL", "fatal"},
                    {"HORDE_STALL_CHECK_TIME_SECONDS", "5"},
                    {"HOROVOD_STALL_CHECK_TIME_SECONDS", "7"},
                    {"HORDE_STALL_SHUTDOWN_TIME_SECONDS", "0"},
                    {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "9"},
                    {"HORDE_STALL_CHECK_DISABLE", "0"},
                    {"HOROVOD_STALL_CHECK_DISABLE", "1"}},
                   &config);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(config.fusion_threshold_bytes, 1024);
  EXPECT_DOUBLE_EQ(config.cycle_time_ms, 0.5);
  EXPECT_EQ(config.log_level, LogLevel::kTrace);
  EXPECT_DOUBLE_EQ(config.stall.check_seconds, 5.0);
  EXPECT_DOUBLE_EQ(config.stall.shutdown_seconds, 0.0);
  EXPECT_TRUE(config.stall.enabled);
}

TEST(Config, MalformedHordeValueIsAnErrorEvenWithAValidAlias) {
  // The HORDE_ name wins, so its bad value is not papered over by the alias.
  Config config;
  Status s = Parse({{"HORDE_FUSION_THRESHOLD", "abc"}, {"HOROVOD_FUSION_THRESHOLD", "1024"}},
                   &config);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("HORDE_FUSION_THRESHOLD"), std::string::npos) << s.message();
}

struct MalformedCase {
  std::string variable;
  std::string value;
  std::string expected_form;  // what the message must say is expected
};

class MalformedValue : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedValue, IsInvalidArgumentNamingVariableAndExpectedForm) {
  const MalformedCase& c = GetParam();
  Config config;
  config.fusion_threshold_bytes = 42;  // an error must leave the output untouched
  Status s = Parse({{c.variable, c.value}}, &config);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << c.variable << "=" << c.value;
  EXPECT_NE(s.message().find(c.variable), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'" + c.value + "'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(c.expected_form), std::string::npos) << s.message();
  EXPECT_EQ(config.fusion_threshold_bytes, 42);
}

const char kInteger[] = "a non-negative integer";
const char kPositive[] = "a positive number";
const char kLevels[] = "one of trace, debug, info, warning, error, fatal";
const char kMpi[] = "MPI";
const char kNonNegative[] = "a non-negative number";
const char kSwitch[] = "1 (on) or 0 (off)";

INSTANTIATE_TEST_SUITE_P(
    AllVariables, MalformedValue,
    ::testing::Values(MalformedCase{"HORDE_FUSION_THRESHOLD", "abc", kInteger},
                      MalformedCase{"HORDE_CACHE_CAPACITY", "-5", kInteger},
                      MalformedCase{"HORDE_CACHE_CAPACITY", "lots", kInteger},
                      MalformedCase{"HORDE_TIMELINE_MARK_CYCLES", "yes", kSwitch},
                      MalformedCase{"HORDE_GPU_OPERATIONS", "CUDA", "NCCL or MPI"},
                      MalformedCase{"HORDE_HIERARCHICAL_ALLREDUCE", "on", kSwitch},
                      MalformedCase{"HORDE_FUSION_THRESHOLD", "-1", kInteger},
                      MalformedCase{"HORDE_FUSION_THRESHOLD", "12x", kInteger},
                      MalformedCase{"HORDE_FUSION_THRESHOLD", "", kInteger},
                      MalformedCase{"HORDE_FUSION_THRESHOLD", "1.5", kInteger},
                      MalformedCase{"HORDE_FUSION_THRESHOLD", "99999999999999999999", kInteger},
                      MalformedCase{"HOROVOD_FUSION_THRESHOLD", "64MB", kInteger},
                      MalformedCase{"HORDE_CYCLE_TIME", "abc", kPositive},
                      MalformedCase{"HORDE_CYCLE_TIME", "-1", kPositive},
                      MalformedCase{"HORDE_CYCLE_TIME", "0", kPositive},
                      MalformedCase{"HORDE_CYCLE_TIME", "12x", kPositive},
                      MalformedCase{"HORDE_CYCLE_TIME", "", kPositive},
                      MalformedCase{"HORDE_CYCLE_TIME", "nan", kPositive},
                      MalformedCase{"HORDE_CYCLE_TIME", "inf", kPositive},
                      MalformedCase{"HOROVOD_CYCLE_TIME", "5ms", kPositive},
                      MalformedCase{"HORDE_LOG_LEVEL", "loud", kLevels},
                      MalformedCase{"HORDE_LOG_LEVEL", "", kLevels},
                      MalformedCase{"HOROVOD_LOG_LEVEL", "warn", kLevels},
                      MalformedCase{"HORDE_CPU_OPERATIONS", "GLOO", kMpi},
                      MalformedCase{"HORDE_CPU_OPERATIONS", "", kMpi},
                      MalformedCase{"HOROVOD_CPU_OPERATIONS", "ccl", kMpi},
                      MalformedCase{"HORDE_STALL_CHECK_TIME_SECONDS", "0", kPositive},
                      MalformedCase{"HORDE_STALL_CHECK_TIME_SECONDS", "-5", kPositive},
                      MalformedCase{"HORDE_STALL_CHECK_TIME_SECONDS", "60s", kPositive},
                      MalformedCase{"HORDE_STALL_CHECK_TIME_SECONDS", "", kPositive},
                      MalformedCase{"HOROVOD_STALL_CHECK_TIME_SECONDS", "inf", kPositive},
                      MalformedCase{"HORDE_STALL_SHUTDOWN_TIME_SECONDS", "-1", kNonNegative},
                      MalformedCase{"HORDE_STALL_SHUTDOWN_TIME_SECONDS", "never", kNonNegative},
                      MalformedCase{"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "nan", kNonNegative},
                      MalformedCase{"HORDE_STALL_CHECK_DISABLE", "true", kSwitch},
                      MalformedCase{"HORDE_STALL_CHECK_DISABLE", "", kSwitch},
                      MalformedCase{"HOROVOD_STALL_CHECK_DISABLE", "2", kSwitch}));

// The rows with a Config field (HORDE_CPU_OPERATIONS is only checked).
std::vector<const Setting*> BoundSettings() {
  std::vector<const Setting*> rows;
  for (const Setting& setting : Settings()) {
    if (!std::holds_alternative<std::monostate>(setting.field)) rows.push_back(&setting);
  }
  return rows;
}

TEST(ConfigTable, ConfigsDefaultsAreTheTablesDefaults) {
  const Config defaults;
  for (const Setting* setting : BoundSettings()) {
    EXPECT_EQ(SettingText(*setting, defaults), setting->default_value) << VariableName(*setting);
  }
}

TEST(ConfigTable, EverySettingParsesItsDefault) {
  for (const Setting& setting : Settings()) {
    Config config;
    Status s = Parse({{VariableName(setting), setting.default_value}}, &config);
    ASSERT_TRUE(s.ok()) << s.message();
    for (const Setting* other : BoundSettings()) {
      EXPECT_EQ(SettingText(*other, config), other->default_value) << VariableName(setting);
    }
  }
}

TEST(ConfigTable, EverySettingRejectsAMalformedValueNamingItsForm) {
  for (const Setting& setting : Settings()) {
    if (setting.form == SettingForm::kFileName) continue;  // any text names a file
    for (const std::string& variable :
         {VariableName(setting), "HOROVOD_" + std::string(setting.name)}) {
      Config config;
      Status s = Parse({{variable, "x?"}}, &config);
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << variable;
      EXPECT_EQ(s.message(),
                "invalid value 'x?' for " + variable + ": expected " + ExpectedForm(setting));
    }
  }
}

TEST(ConfigTable, EveryFormSaysWhatItExpectsInTheWordsTheDocsQuote) {
  const std::map<std::string, std::string> expected = {
      {"FUSION_THRESHOLD", kInteger},
      {"CYCLE_TIME", kPositive},
      {"STALL_SHUTDOWN_TIME_SECONDS", kNonNegative},
      {"AUTOTUNE", kSwitch},
      {"LOG_LEVEL", kLevels},
      {"CPU_OPERATIONS", "MPI (the only CPU backend this build has)"},
      {"GPU_OPERATIONS", "NCCL or MPI"}};
  for (const Setting& setting : Settings()) {
    auto it = expected.find(setting.name);
    if (it != expected.end()) {
      EXPECT_EQ(ExpectedForm(setting), it->second) << setting.name;
    }
  }
}

TEST(ConfigTable, EverySettingReadsItsHorovodAliasAndTheHordeNameWins) {
  for (const Setting* setting : BoundSettings()) {
    const std::string other = testing::OtherSettingValue(*setting);
    const std::string alias = "HOROVOD_" + std::string(setting->name);
    Config from_alias;
    ASSERT_TRUE(Parse({{alias, other}}, &from_alias).ok()) << alias << "=" << other;
    EXPECT_EQ(SettingText(*setting, from_alias), other) << alias;
    Config both;
    ASSERT_TRUE(
        Parse({{VariableName(*setting), setting->default_value}, {alias, other}}, &both).ok());
    EXPECT_EQ(SettingText(*setting, both), setting->default_value) << VariableName(*setting);
  }
}

TEST(ConfigTable, ChoicesAreTakenAsWrittenOrInLowerCase) {
  Config config;
  ASSERT_TRUE(Parse({{"HORDE_GPU_OPERATIONS", "mpi"}, {"HORDE_LOG_LEVEL", "Info"}}, &config).ok());
  EXPECT_FALSE(config.gpu_operations_nccl);
  EXPECT_EQ(config.log_level, LogLevel::kInfo);
  EXPECT_EQ(Parse({{"HORDE_GPU_OPERATIONS", "Mpi"}}, &config).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace horde

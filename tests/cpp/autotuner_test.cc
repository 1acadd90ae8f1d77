#include "core/autotuner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/temp_dir.h"

namespace horde {
namespace {

// A workload whose throughput depends on the parameters: best at an 8 MiB threshold,
// a 2 ms cycle and the cache off.
double BytesPerSecond(const TunableParameters& p) {
  double rate = 1e9;
  if (p.fusion_threshold_bytes != (8 << 20)) rate *= 0.8;
  if (p.cycle_time_ms != 2.0) rate *= 0.9;
  if (p.cache_enabled) rate *= 0.95;
  return rate;
}

TEST(Autotuner, SearchesEachParameterSettlesOnTheBestAndLogsEverySample) {
  const test::TempDir dir;
  const std::string log = dir.File("autotune.csv");
  Autotuner tuner({64 << 20, 1.0, true}, 1.0);
  ASSERT_TRUE(tuner.OpenLog(log).ok());
  EXPECT_EQ(tuner.Decode(tuner.choice()), (TunableParameters{64 << 20, 1.0, true}))
      << "it starts from the configured parameters";
  auto now = Autotuner::Clock::time_point();
  int steps = 0;
  while (!tuner.settled() && steps < 10000) {
    const double rate = BytesPerSecond(tuner.Decode(tuner.choice()));
    now += std::chrono::milliseconds(100);
    tuner.Record(static_cast<int64_t>(rate * 0.1), now);
    ++steps;
  }
  ASSERT_TRUE(tuner.settled());
  EXPECT_TRUE(Autotuner::IsSettled(tuner.choice()));
  EXPECT_EQ(tuner.Decode(tuner.choice()), (TunableParameters{8 << 20, 2.0, false}));

  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line,
            "sample,fusion_threshold_bytes,cycle_time_ms,cache_enabled,bytes_per_second,state");
  int rows = 0;
  std::string last;
  while (std::getline(in, line)) {
    ++rows;
    last = line;
  }
  EXPECT_EQ(rows, 5 + 4 + 2) << "thresholds, then cycle times, then the cache";
  EXPECT_NE(last.find(",settled"), std::string::npos) << last;
}

TEST(Autotuner, AWindowThatReducedNothingIsNotScoredButExtended) {
  const test::TempDir dir;
  const std::string log = dir.File("autotune.csv");
  Autotuner tuner({1 << 20, 1.0, true}, 0.2);
  ASSERT_TRUE(tuner.OpenLog(log).ok());
  auto now = Autotuner::Clock::time_point();
  for (int i = 0; i < 10000 && !tuner.settled(); ++i) {
    now += std::chrono::milliseconds(100);
    // Every fifth round carries bytes: most 0.2 s windows see none at all.
    tuner.Record(i % 5 == 0 ? 1000 : 0, now);
  }
  ASSERT_TRUE(tuner.settled());
  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    const std::string rate = line.substr(0, line.rfind(','));
    EXPECT_NE(rate.substr(rate.rfind(',') + 1), "0") << "a sample scored zero: " << line;
  }
  EXPECT_GT(rows, 0);
}

TEST(Autotuner, ChoicesDecodeAlikeOnEveryRank) {
  Autotuner rank0({1 << 20, 1.0, true}, 1.0);
  Autotuner rank1({1 << 20, 1.0, true}, 1.0);
  for (uint64_t choice : {uint64_t{0}, uint64_t{0x010203}, uint64_t{0x000102}}) {
    EXPECT_EQ(rank0.Decode(choice), rank1.Decode(choice));
  }
}

TEST(Autotuner, WithTheCacheDisabledItNeverTurnsItOn) {
  Autotuner tuner({1 << 20, 1.0, false}, 0.5);
  auto now = Autotuner::Clock::time_point();
  for (int i = 0; i < 1000 && !tuner.settled(); ++i) {
    EXPECT_FALSE(tuner.Decode(tuner.choice()).cache_enabled);
    now += std::chrono::milliseconds(100);
    tuner.Record(1000, now);
  }
  EXPECT_TRUE(tuner.settled());
}

TEST(Autotuner, AnUnwritableLogIsAClearError) {
  Autotuner tuner({1 << 20, 1.0, true}, 1.0);
  Status s = tuner.OpenLog("/nonexistent-dir/log.csv");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("/nonexistent-dir/log.csv"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace horde

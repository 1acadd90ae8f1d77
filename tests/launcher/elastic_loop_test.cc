// The supervisor's loop with fake discovery, ssh checks, generations and signals, on a
// fake clock that moves only when the loop waits.
#include "launcher/elastic_loop.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <map>

namespace horde::launcher {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct FakeClock : StopSignals {
  ElasticTime now = ElasticTime() + std::chrono::hours(1);
  std::map<ElasticTime, int> signals;  // sent at
  int Take(milliseconds wait) override {
    auto due = signals.begin();
    if (due != signals.end() && due->first <= now + wait) {
      now = std::max(now, due->first);
      int signal = due->second;
      signals.erase(due);
      return signal;
    }
    now += wait;
    return 0;
  }
  ElasticTime Now() override { return now; }
};

// Each run takes `run_time`; none ends when it is negative.
struct FakeDiscovery : HostDiscovery {
  FakeClock& clock;
  std::vector<Host> hosts;
  ElasticClock::duration run_time{0};
  std::optional<ElasticTime> done_at;
  int runs = 0;
  FakeDiscovery(FakeClock& c, std::vector<Host> h) : clock(c), hosts(std::move(h)) {}
  void Start() override {
    ++runs;
    if (run_time >= ElasticClock::duration::zero()) done_at = clock.now + run_time;
  }
  std::optional<DiscoveryResult> Poll() override {
    if (!done_at || clock.now < *done_at) return std::nullopt;
    done_at.reset();
    DiscoveryResult result;
    result.hosts = hosts;
    return result;
  }
};

struct HangingSshCheck : SshChecker {
  std::vector<std::string> checked;
  void Start(const std::vector<std::string>& hosts) override { checked = hosts; }
  std::optional<std::vector<SshCheckFailure>> Poll() override { return std::nullopt; }
};

// Every generation ends with `end` after `run_time`; its exit wrappers report `failures`,
// each that long after the start (the same again at the end, as the lines stay).
struct FakeGeneration : GenerationRunner {
  FakeClock& clock;
  GenerationEnd end;
  ElasticClock::duration run_time;
  std::vector<std::pair<ElasticClock::duration, RankEnd>> failures;
  size_t reported = 0;
  std::vector<std::pair<ElasticTime, GenerationPlan>> started;
  std::optional<int> stopped;
  FakeGeneration(FakeClock& c, GenerationEnd e, ElasticClock::duration t)
      : clock(c), end(std::move(e)), run_time(t) {}
  void Start(const GenerationPlan& plan) override {
    started.emplace_back(clock.now, plan);
    reported = 0;
  }
  std::optional<GenerationEnd> Poll(milliseconds wait) override {
    if (stopped || clock.now >= started.back().first + run_time) return end;
    clock.now += wait;
    return std::nullopt;
  }
  std::vector<RankEnd> TakeRankFailures() override {
    std::vector<RankEnd> due;
    for (; reported < failures.size(); ++reported) {
      if (clock.now < started.back().first + failures[reported].first) break;
      due.push_back(failures[reported].second);
    }
    return due;
  }
  void SendHostUpdate() override {}
  void Stop(int signal) override { stopped = signal; }
};

struct Loop {
  FakeClock clock;
  ElasticSettings settings;
  std::vector<std::string> lines;
  int Run(HostDiscovery& discovery, SshChecker& ssh, GenerationRunner& generation) {
    ElasticPolicy policy(settings, HostPool("vm", {}), clock.now);
    return RunElasticLoop(policy, {discovery, ssh, generation, clock,
                                   [&](const std::string& line) { lines.push_back(line); }});
  }
};

TEST(ElasticLoop, RunsAGenerationToItsEnd) {
  Loop loop;
  FakeDiscovery discovery(loop.clock, {{"localhost", 2}});
  HangingSshCheck ssh;
  FakeGeneration generation(loop.clock, GenerationEnd{}, seconds(5));
  loop.settings.max_np = 2;
  EXPECT_EQ(loop.Run(discovery, ssh, generation), 0);
  ASSERT_EQ(generation.started.size(), 1u);
  EXPECT_EQ(generation.started[0].second.hosts, (std::vector<Host>{{"localhost", 2}}));
  EXPECT_GE(discovery.runs, 5);  // every second while it ran
}

// An ssh check that never answers (or a slow discovery script) does not keep the loop
// from seeing the generation end, nor from a stop signal.
TEST(ElasticLoop, ASlowSshCheckHoldsUpNeitherTheGenerationNorTheSignals) {
  Loop loop;
  FakeDiscovery discovery(loop.clock, {{"localhost", 1}});
  HangingSshCheck ssh;
  FakeGeneration generation(loop.clock, GenerationEnd{}, seconds(5));
  loop.settings.max_np = 3;
  discovery.run_time = seconds(0);
  ElasticTime start = loop.clock.now;
  // The second run adds a remote host whose check hangs.
  struct Growing : FakeDiscovery {
    using FakeDiscovery::FakeDiscovery;
    void Start() override {
      if (runs == 1) hosts.push_back({"hostB", 2});
      FakeDiscovery::Start();
    }
  } growing(loop.clock, {{"localhost", 1}});
  EXPECT_EQ(loop.Run(growing, ssh, generation), 0);
  EXPECT_EQ(ssh.checked, std::vector<std::string>{"hostB"});
  EXPECT_LT(loop.clock.now - start, seconds(6));

  Loop stopped;
  FakeDiscovery hanging(stopped.clock, {{"localhost", 1}});
  hanging.run_time = seconds(-1);  // the first run never ends
  FakeGeneration never(stopped.clock, GenerationEnd{}, seconds(5));
  stopped.clock.signals[stopped.clock.now + seconds(2)] = SIGINT;
  EXPECT_EQ(stopped.Run(hanging, ssh, never), 128 + SIGINT);
  EXPECT_TRUE(never.started.empty());
}

TEST(ElasticLoop, AnMpirunThatCannotStartBacksOffAndGivesUp) {
  Loop loop;
  FakeDiscovery discovery(loop.clock, {{"localhost", 1}});
  HangingSshCheck ssh;
  GenerationEnd bad;
  bad.exit_code = 1;
  FakeGeneration generation(loop.clock, bad, seconds(0));
  EXPECT_EQ(loop.Run(discovery, ssh, generation), 1);
  ASSERT_EQ(generation.started.size(), static_cast<size_t>(ElasticPolicy::kMaxUnexplained));
  for (size_t i = 1; i < generation.started.size(); ++i) {
    EXPECT_GE(generation.started[i].first - generation.started[i - 1].first, seconds(1 << (i - 1)));
  }
  EXPECT_EQ(loop.lines.back().rfind("giving up: generation 4 ended with exit code 1", 0), 0u);
}

TEST(ElasticLoop, AStopSignalStopsTheRunningGeneration) {
  Loop loop;
  FakeDiscovery discovery(loop.clock, {{"localhost", 1}});
  HangingSshCheck ssh;
  FakeGeneration generation(loop.clock, GenerationEnd{}, seconds(60));
  loop.clock.signals[loop.clock.now + seconds(3)] = SIGTERM;
  EXPECT_EQ(loop.Run(discovery, ssh, generation), 128 + SIGTERM);
  EXPECT_EQ(generation.stopped, SIGTERM);
}

// In place, a rank that fails while the generation runs is handled as its line comes,
// and the generation goes on to its end: one generation, one line, exit code 0.
TEST(ElasticLoop, InPlaceARankFailureDoesNotEndTheGeneration) {
  Loop loop;
  FakeDiscovery discovery(loop.clock, {{"localhost", 3}});
  HangingSshCheck ssh;
  GenerationEnd end;
  end.named_by_wrapper = RankEnd{2, true, 9};
  FakeGeneration generation(loop.clock, end, seconds(10));
  generation.failures = {{seconds(3), RankEnd{2, true, 9}}};
  loop.settings.min_np = 2;
  loop.settings.max_np = 3;
  loop.settings.in_place = true;
  EXPECT_EQ(loop.Run(discovery, ssh, generation), 0);
  EXPECT_EQ(generation.started.size(), 1u);
  EXPECT_FALSE(generation.stopped);
  EXPECT_EQ(loop.lines, (std::vector<std::string>{
                            "reset 1: rank 2 on localhost failed (killed by signal 9); one slot "
                            "of localhost (this machine) is withheld (1 in all); the 2 other "
                            "rank(s) recover in place"}));
}

// The failure past --reset-limit gives up at once: the running generation is stopped.
TEST(ElasticLoop, InPlaceAFailurePastTheResetLimitStopsTheGeneration) {
  Loop loop;
  FakeDiscovery discovery(loop.clock, {{"localhost", 3}});
  HangingSshCheck ssh;
  FakeGeneration generation(loop.clock, GenerationEnd{}, seconds(60));
  generation.failures = {{seconds(3), RankEnd{1, false, 1}}};
  loop.settings.max_np = 3;
  loop.settings.in_place = true;
  loop.settings.reset_limit = 0;
  ElasticTime start = loop.clock.now;
  EXPECT_EQ(loop.Run(discovery, ssh, generation), 1);
  EXPECT_EQ(generation.stopped, SIGTERM);
  EXPECT_LT(loop.clock.now - start, seconds(5));
  EXPECT_EQ(loop.lines.back(),
            "giving up: rank 1 on localhost failed (exit code 1); one slot of localhost (this "
            "machine) is withheld (1 in all), and the job was already reset 0 time(s) "
            "(--reset-limit 0)");
}

}  // namespace
}  // namespace horde::launcher

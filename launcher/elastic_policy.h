#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/elastic_hosts.h"
#include "launcher/elastic_services.h"
#include "launcher/elastic_verdict.h"

namespace horde::launcher {

struct ElasticSettings {
  int min_np = 1;
  int max_np = 1;
  std::chrono::seconds elastic_timeout{600};
  std::optional<int> reset_limit;
  std::string script;     // the discovery script, for messages
  bool in_place = false;  // the ranks recover in place (elastic_mode.h)
};

// What the loop does next; every field may be set at once, applied in this order.
struct ElasticAction {
  std::vector<std::string> lines;  // to print, each after "horderun: "
  bool discover = false;           // run the discovery script
  std::vector<std::string> check_ssh;
  std::optional<GenerationPlan> start;
  bool send_host_update = false;
  std::optional<int> stop_generation;  // pass this signal on to the generation
  std::optional<int> exit_code;        // the job is over
};

// The elastic supervisor's decisions, with no process, clock or file of its own: events
// (a tick, a discovery run, ssh checks, a generation's end, a stop signal) come in with
// the time, actions go out. The rules:
//  - A generation starts once the usable hosts (discovered, not left out, remote ones
//    past their ssh check) have --min-np slots, with min(slots, --max-np) ranks; after
//    --elastic-timeout without them horderun gives up.
//  - Hosts are compared as sets of host:slots, and the hosts of the running generation
//    come first when --max-np cuts: a script that lists them in another order is no
//    change. A change is sent to the ranks once per generation.
//  - The first discovery run must work. Later ones that fail keep the last hosts, with
//    one line when they start failing and one when they work again, until they have
//    failed for --elastic-timeout.
//  - A generation's end is judged (elastic_verdict.h): a failed or hung rank's host is
//    left out (HostPool); a generation that names no rank backs off (1 s, doubling) and
//    after kMaxUnexplained in a row horderun gives up; lost commits stop the job.
//  - Every reset prints one line with its reason; more than --reset-limit give up.
//  - In place (settings.in_place), a rank's failure reported while its generation runs
//    is a reset that does not stop it: one line, its host left out (or its slot
//    withheld) as a restart would, counted against --reset-limit, and never blamed again
//    at the generation's end (elastic_verdict.h's InPlaceRecord).
class ElasticPolicy {
 public:
  enum class State { kWaitingForSlots, kRunning, kResetting, kFinished, kGaveUp, kStopped };

  static constexpr auto kDiscoveryInterval = std::chrono::seconds(1);
  static constexpr int kMaxUnexplained = 5;
  static constexpr auto kFirstBackOff = std::chrono::seconds(1);
  // A generation that ran this long made progress: its failure starts a new count.
  static constexpr auto kSettledRun = std::chrono::seconds(60);
  static constexpr size_t kStderrLinesLogged = 5;

  ElasticPolicy(ElasticSettings settings, HostPool pool, ElasticTime now);

  ElasticAction OnTick(ElasticTime now);
  ElasticAction OnDiscovery(const DiscoveryResult& result, ElasticTime now);
  ElasticAction OnSshChecked(const std::vector<SshCheckFailure>& failures, ElasticTime now);
  ElasticAction OnGenerationEnd(const GenerationEnd& end, ElasticTime now);
  // A rank's exit wrapper reported its failure while the generation runs.
  ElasticAction OnRankFailed(const RankEnd& failed, ElasticTime now);
  ElasticAction OnStopSignal(int signal, ElasticTime now);

  State state() const { return state_; }

 private:
  std::vector<Host> Candidates() const;
  bool NeedsSshCheck(const std::vector<Host>& hosts, ElasticAction& action);
  void TryStart(ElasticTime now, ElasticAction& action);
  void CheckForUpdate(ElasticAction& action);
  void EnterWaiting(ElasticTime now);
  void LogStderr(const DiscoveryResult& result, ElasticAction& action);
  void DiscoveryFailed(const std::string& error, ElasticTime now, ElasticAction& action);
  std::string RecordFailedRank(int rank, ElasticTime now, std::string& done);
  std::string Blame(const GenerationVerdict& verdict, const GenerationEnd& end, ElasticTime now);
  std::string RestartPoint() const;
  void Reset(const GenerationVerdict& verdict, const GenerationEnd& end, ElasticTime now,
             ElasticAction& action);
  void GiveUp(const std::string& line, ElasticAction& action);
  // In place (elastic_in_place.cc).
  void LeaveRunning(int rank);
  int Survivors() const;
  InPlaceRecord InPlace() const;
  void RestartAfterInPlace(const GenerationEnd& end, ElasticTime now, ElasticAction& action);

  ElasticSettings settings_;
  HostPool pool_;
  State state_ = State::kWaitingForSlots;
  // Discovery.
  std::vector<Host> discovered_;  // the last good run's
  bool discovered_once_ = false;
  bool discovering_ = false;
  ElasticTime next_discovery_;
  std::optional<ElasticTime> failing_since_;
  int failed_runs_ = 0;
  std::vector<std::string> last_stderr_;
  // ssh checks of remote hosts.
  std::set<std::string> reachable_;  // passed, and not failed since
  std::set<std::string> checking_;
  // Waiting, running, resetting.
  ElasticTime wait_deadline_;
  bool said_waiting_ = false;
  ElasticTime retry_at_;
  std::vector<Host> current_;  // the running (or last) generation's hosts
  std::vector<Host> running_;  // current_ less the ranks failed in place and hosts left out
  std::set<std::string> blamed_hosts_;    // remote hosts left out for this generation's failures
  std::vector<RankEnd> failed_in_place_;  // this generation's, each rank once
  ElasticTime started_at_;
  bool update_sent_ = false;
  int generation_ = 0;
  int resets_ = 0;
  int unexplained_in_a_row_ = 0;
  std::optional<std::string> commit_;  // the newest a rank announced
  int stop_signal_ = 0;
};

}  // namespace horde::launcher

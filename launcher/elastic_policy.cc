#include "launcher/elastic_policy.h"

#include <signal.h>

#include <algorithm>

#include "launcher/host_name.h"
#include "launcher/shell_words.h"

namespace horde::launcher {
namespace {

constexpr size_t kMaxLoggedLine = 200;

bool SameHosts(std::vector<Host> a, std::vector<Host> b) {
  auto by_name = [](const Host& x, const Host& y) { return x.name < y.name; };
  std::sort(a.begin(), a.end(), by_name);
  std::sort(b.begin(), b.end(), by_name);
  return a == b;
}

std::string Seconds(ElasticClock::duration duration) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(duration).count()) + " s";
}

std::string Describe(const RankEnd& end) { return "exit code " + std::to_string(end.ExitCode()); }

}  // namespace

ElasticPolicy::ElasticPolicy(ElasticSettings settings, HostPool pool, ElasticTime now)
    : settings_(std::move(settings)), pool_(std::move(pool)), next_discovery_(now) {
  EnterWaiting(now);
}

void ElasticPolicy::EnterWaiting(ElasticTime now) {
  state_ = State::kWaitingForSlots;
  wait_deadline_ = now + settings_.elastic_timeout;
  said_waiting_ = false;
}

// A running generation is stopped first: SIGTERM lets mpirun stop its ranks.
void ElasticPolicy::GiveUp(const std::string& line, ElasticAction& action) {
  if (state_ == State::kRunning) action.stop_generation = SIGTERM;
  state_ = State::kGaveUp;
  action.lines.push_back(line);
  action.exit_code = 1;
}

// The hosts a generation would run on now; the running generation's first, so that
// --max-np cuts the same way whatever order the script lists hosts in.
std::vector<Host> ElasticPolicy::Candidates() const {
  std::vector<Host> usable = pool_.Usable(discovered_);
  std::stable_partition(usable.begin(), usable.end(), [&](const Host& host) {
    return std::any_of(current_.begin(), current_.end(),
                       [&](const Host& running) { return running.name == host.name; });
  });
  return TakeSlots(usable, settings_.max_np);
}

// Asks for the ssh check of remote `hosts` not yet checked; true while checks are due.
bool ElasticPolicy::NeedsSshCheck(const std::vector<Host>& hosts, ElasticAction& action) {
  if (!checking_.empty()) return true;
  for (const Host& host : hosts) {
    if (!pool_.IsLocal(host.name) && !reachable_.count(host.name)) {
      action.check_ssh.push_back(host.name);
    }
  }
  if (action.check_ssh.empty()) return false;
  checking_.insert(action.check_ssh.begin(), action.check_ssh.end());
  action.lines.push_back("checking ssh to " + JoinShellWords(action.check_ssh));
  return true;
}

void ElasticPolicy::TryStart(ElasticTime now, ElasticAction& action) {
  if (!discovered_once_) return;
  std::vector<Host> hosts = Candidates();
  if (NeedsSshCheck(hosts, action)) return;
  int slots = TotalSlots(hosts);
  if (slots >= settings_.min_np) {
    action.start = GenerationPlan{generation_, hosts, commit_};
    state_ = State::kRunning;
    current_ = hosts;
    running_ = hosts;
    blamed_hosts_.clear();
    failed_in_place_.clear();
    started_at_ = now;
    update_sent_ = false;
  } else if (now >= wait_deadline_) {
    GiveUp("only " + std::to_string(slots) + " usable slot(s) (" +
               (hosts.empty() ? "no hosts" : FormatHostList(hosts)) + ") for " +
               std::to_string(settings_.elastic_timeout.count()) +
               " s (--elastic-timeout), expected at least --min-np " +
               std::to_string(settings_.min_np),
           action);
  } else if (!said_waiting_) {
    action.lines.push_back("waiting for at least " + std::to_string(settings_.min_np) +
                           " slots (have " + std::to_string(slots) + ")");
    said_waiting_ = true;
  }
}

void ElasticPolicy::CheckForUpdate(ElasticAction& action) {
  if (update_sent_) return;
  std::vector<Host> hosts = Candidates();
  if (NeedsSshCheck(hosts, action) || SameHosts(hosts, running_)) return;
  action.send_host_update = true;
  update_sent_ = true;
}

ElasticAction ElasticPolicy::OnTick(ElasticTime now) {
  ElasticAction action;
  if (state_ == State::kFinished || state_ == State::kGaveUp || state_ == State::kStopped) {
    return action;
  }
  if (!discovering_ && now >= next_discovery_) {
    action.discover = true;
    discovering_ = true;
  }
  if (state_ == State::kResetting && now >= retry_at_) EnterWaiting(now);
  if (state_ == State::kWaitingForSlots) TryStart(now, action);
  return action;
}

// What the script wrote on stderr, when it differs from the last run's: a script that
// warns every second is logged once.
void ElasticPolicy::LogStderr(const DiscoveryResult& result, ElasticAction& action) {
  if (result.stderr_lines == last_stderr_) return;
  last_stderr_ = result.stderr_lines;
  size_t shown = std::min(result.stderr_lines.size(), kStderrLinesLogged);
  for (size_t i = 0; i < shown; ++i) {
    action.lines.push_back("host discovery script stderr: " +
                           result.stderr_lines[i].substr(0, kMaxLoggedLine));
  }
  if (result.stderr_lines.size() > shown) {
    action.lines.push_back("host discovery script stderr: (" +
                           std::to_string(result.stderr_lines.size() - shown) + " more lines)");
  }
}

void ElasticPolicy::DiscoveryFailed(const std::string& error, ElasticTime now,
                                    ElasticAction& action) {
  if (!discovered_once_) return GiveUp(error, action);
  ++failed_runs_;
  if (!failing_since_) {
    failing_since_ = now;
    action.lines.push_back(error + "; keeping the last hosts and retrying for up to " +
                           std::to_string(settings_.elastic_timeout.count()) +
                           " s (--elastic-timeout)");
  } else if (now - *failing_since_ >= settings_.elastic_timeout) {
    GiveUp("host discovery has failed for " + Seconds(now - *failing_since_) +
               " (--elastic-timeout); the last run: " + error,
           action);
  }
}

ElasticAction ElasticPolicy::OnDiscovery(const DiscoveryResult& result, ElasticTime now) {
  ElasticAction action;
  discovering_ = false;
  next_discovery_ = now + kDiscoveryInterval;
  LogStderr(result, action);
  if (!result.hosts) {
    DiscoveryFailed(result.error, now, action);
    return action;
  }
  if (failing_since_) {
    action.lines.push_back("host discovery script " + settings_.script + " works again after " +
                           std::to_string(failed_runs_) + " failed run(s)");
    failing_since_.reset();
    failed_runs_ = 0;
  }
  discovered_ = *result.hosts;
  discovered_once_ = true;
  for (const std::string& host : pool_.EndCooldowns(now)) {
    action.lines.push_back("host " + host + " is back after its cool-down");
  }
  if (state_ == State::kWaitingForSlots) TryStart(now, action);
  if (state_ == State::kRunning) CheckForUpdate(action);
  return action;
}

ElasticAction ElasticPolicy::OnSshChecked(const std::vector<SshCheckFailure>& failures,
                                          ElasticTime now) {
  ElasticAction action;
  reachable_.insert(checking_.begin(), checking_.end());
  checking_.clear();
  for (const SshCheckFailure& failure : failures) {
    reachable_.erase(failure.host);
    action.lines.push_back(failure.line + "; " + pool_.Exclude(failure.host, now));
  }
  if (state_ == State::kWaitingForSlots) TryStart(now, action);
  if (state_ == State::kRunning) CheckForUpdate(action);
  return action;
}

ElasticAction ElasticPolicy::OnStopSignal(int signal, ElasticTime now) {
  (void)now;
  ElasticAction action;
  if (state_ == State::kRunning) {
    action.stop_generation = signal;
  } else if (state_ != State::kStopped) {
    action.exit_code = 128 + signal;
  } else {
    return action;  // already stopping
  }
  state_ = State::kStopped;
  stop_signal_ = signal;
  return action;
}

// "rank 2 on hostB", having left its host out (or withheld its slot on this machine) and
// said so in `done`; a remote host once per generation.
std::string ElasticPolicy::RecordFailedRank(int rank, ElasticTime now, std::string& done) {
  std::string host = HostOfRank(current_, rank);
  std::string named = "rank " + std::to_string(rank) + (host.empty() ? "" : " on " + host);
  if (host.empty() || (!pool_.IsLocal(host) && !blamed_hosts_.insert(host).second)) return named;
  reachable_.erase(host);  // checked again should it come back
  done += "; " + pool_.RecordFailure(host, discovered_, now);
  return named;
}

std::string ElasticPolicy::RestartPoint() const {
  return commit_ ? "the last commit" : "the start (no commit was announced yet)";
}

// The reason for a reset, having left out (or withheld a slot of) the blamed hosts.
std::string ElasticPolicy::Blame(const GenerationVerdict& verdict, const GenerationEnd& end,
                                 ElasticTime now) {
  switch (verdict.kind) {
    case GenerationVerdict::kRequestedReset: return "the ranks committed and asked to re-form";
    case GenerationVerdict::kUnexplained:
      return "generation " + std::to_string(generation_) + " ended with exit code " +
             std::to_string(end.exit_code) + " and no rank named as failed" +
             (end.complaint.empty() ? "" : " (mpirun: " + QuotedForMessage(end.complaint) + ")");
    default: break;
  }
  std::vector<int> ranks = verdict.failed ? std::vector<int>{verdict.failed->rank} : verdict.hung;
  std::string named, done;
  for (int rank : ranks) named += (named.empty() ? "" : ", ") + RecordFailedRank(rank, now, done);
  if (verdict.failed) return named + " failed (" + Describe(*verdict.failed) + ")" + done;
  return named + " hung (named by the stall report)" + done;
}

void ElasticPolicy::Reset(const GenerationVerdict& verdict, const GenerationEnd& end,
                          ElasticTime now, ElasticAction& action) {
  bool unexplained = verdict.kind == GenerationVerdict::kUnexplained;
  if (!unexplained || now - started_at_ >= kSettledRun) unexplained_in_a_row_ = 0;
  std::string reason = Blame(verdict, end, now);
  if (unexplained && ++unexplained_in_a_row_ >= kMaxUnexplained) {
    return GiveUp("giving up: " + reason + "; " + std::to_string(unexplained_in_a_row_) +
                      " generations in a row failed without naming a rank: check the mpirun "
                      "command (--verbose prints it) and that every host can start ranks",
                  action);
  }
  if (settings_.reset_limit && resets_ >= *settings_.reset_limit) {
    return GiveUp("giving up: " + reason + ", and the job was already reset " +
                      std::to_string(resets_) + " time(s) (--reset-limit " +
                      std::to_string(*settings_.reset_limit) + ")",
                  action);
  }
  ++resets_;
  ++generation_;
  std::string line = "reset " + std::to_string(resets_) + ": " + reason + "; restarting from " +
                     RestartPoint();
  if (!unexplained) {
    action.lines.push_back(line);
    EnterWaiting(now);
    return TryStart(now, action);
  }
  auto back_off = kFirstBackOff * (1 << (unexplained_in_a_row_ - 1));
  action.lines.push_back(line + " in " + Seconds(back_off) + " (" +
                         std::to_string(unexplained_in_a_row_) + " in a row without a named " +
                         "rank; horderun gives up at " + std::to_string(kMaxUnexplained) + ")");
  state_ = State::kResetting;
  retry_at_ = now + back_off;
}

ElasticAction ElasticPolicy::OnGenerationEnd(const GenerationEnd& end, ElasticTime now) {
  ElasticAction action;
  if (end.commit) commit_ = end.commit;
  if (state_ == State::kStopped) {
    action.exit_code = 128 + stop_signal_;
    return action;
  }
  GenerationVerdict verdict = Judge(end, update_sent_, InPlace());
  if (verdict.kind == GenerationVerdict::kFinished) {
    state_ = State::kFinished;
    action.exit_code = 0;
  } else if (verdict.kind == GenerationVerdict::kAfterInPlaceFailures) {
    RestartAfterInPlace(end, now, action);
  } else if (verdict.kind == GenerationVerdict::kCommitLost) {
    GiveUp("no host that holds a commit of this job is left (the newest was " +
               commit_.value_or("not announced") + "); job stopped",
           action);
  } else {
    Reset(verdict, end, now, action);
  }
  return action;
}

}  // namespace horde::launcher

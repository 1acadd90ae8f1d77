// ElasticPolicy's handling of ranks that fail while their generation goes on in place
// (Open MPI 5 with ULFM): elastic_policy.h.
#include <algorithm>

#include "launcher/elastic_policy.h"

namespace horde::launcher {
namespace {

// As the rank's exit wrapper says it.
std::string HowItEnded(const RankEnd& end) {
  return (end.signaled ? "killed by signal " : "exit code ") + std::to_string(end.number);
}

}  // namespace

int ElasticPolicy::Survivors() const {
  return TotalSlots(current_) - static_cast<int>(failed_in_place_.size());
}

InPlaceRecord ElasticPolicy::InPlace() const {
  return {failed_in_place_, !failed_in_place_.empty() && Survivors() < settings_.min_np};
}

// Takes the failed rank out of what the generation runs, as a host update compares it
// with: one slot of this machine; a remote host as a whole, since it is left out (its
// other ranks go on, and are not to be replaced by a host update).
void ElasticPolicy::LeaveRunning(int rank) {
  std::string host = HostOfRank(current_, rank);
  auto it = std::find_if(running_.begin(), running_.end(),
                         [&](const Host& running) { return running.name == host; });
  if (it == running_.end()) return;
  if (!pool_.IsLocal(host) || --it->slots == 0) running_.erase(it);
}

ElasticAction ElasticPolicy::OnRankFailed(const RankEnd& failed, ElasticTime now) {
  ElasticAction action;
  if (!settings_.in_place || state_ != State::kRunning) return action;  // the end tells
  for (const RankEnd& seen : failed_in_place_) {
    if (seen.rank == failed.rank) return action;
  }
  failed_in_place_.push_back(failed);
  std::string done;
  std::string reason = RecordFailedRank(failed.rank, now, done) + " failed (" + HowItEnded(failed) +
                       ")" + done;
  LeaveRunning(failed.rank);
  if (settings_.reset_limit && resets_ >= *settings_.reset_limit) {
    GiveUp("giving up: " + reason + ", and the job was already reset " + std::to_string(resets_) +
               " time(s) (--reset-limit " + std::to_string(*settings_.reset_limit) + ")",
           action);
    return action;
  }
  ++resets_;
  const std::string others = "the " + std::to_string(Survivors()) + " other rank(s) ";
  action.lines.push_back("reset " + std::to_string(resets_) + ": " + reason + "; " + others +
                         (Survivors() >= settings_.min_np
                              ? "recover in place"
                              : "are fewer than --min-np " + std::to_string(settings_.min_np) +
                                    ": they leave, and a new generation forms"));
  return action;
}

// The failures that ended the generation were counted as they came: no reset is counted
// again, and the next generation starts at once.
void ElasticPolicy::RestartAfterInPlace(const GenerationEnd& end, ElasticTime now,
                                        ElasticAction& action) {
  std::string named;
  for (const RankEnd& failed : failed_in_place_) {
    std::string host = HostOfRank(current_, failed.rank);
    named += (named.empty() ? "rank " : ", rank ") + std::to_string(failed.rank) +
             (host.empty() ? "" : " on " + host);
  }
  std::string line = "generation " + std::to_string(generation_) + " ended with exit code " +
                     std::to_string(end.exit_code);
  if (InPlace().below_min_np) {
    line += ": the failure(s) handled in place (" + named + ") left " +
            std::to_string(Survivors()) + " rank(s), fewer than --min-np " +
            std::to_string(settings_.min_np);
  } else {
    line += " after the failure(s) handled in place (" + named + ")";
  }
  unexplained_in_a_row_ = 0;
  ++generation_;
  action.lines.push_back(line + "; restarting from " + RestartPoint());
  EnterWaiting(now);
  TryStart(now, action);
}

}  // namespace horde::launcher

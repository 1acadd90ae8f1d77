#include "launcher/elastic_verdict.h"

#include <signal.h>

#include <algorithm>

#include "launcher/elastic_exit_codes.h"

namespace horde::launcher {
namespace {

// A death by SIGUSR1 is horderun's host update come before the rank's handler.
bool IsFailure(const std::optional<RankEnd>& end) {
  if (!end) return false;
  if (end->signaled) return end->number != SIGUSR1;
  return end->number != 0 && end->number != kResetExitCode && end->number != kCommitLostExitCode;
}

bool Handled(const InPlaceRecord& in_place, int rank) {
  return std::any_of(in_place.handled.begin(), in_place.handled.end(),
                     [&](const RankEnd& end) { return end.rank == rank; });
}

// mpirun passed on the status of a rank that failed while the others went on.
bool ExitCodeOfAHandledRank(const InPlaceRecord& in_place, int exit_code) {
  return std::any_of(in_place.handled.begin(), in_place.handled.end(),
                     [&](const RankEnd& end) { return end.ExitCode() == exit_code; });
}

}  // namespace

GenerationVerdict Judge(const GenerationEnd& end, bool update_sent, const InPlaceRecord& in_place) {
  GenerationVerdict verdict;
  if (end.exit_code == 0) return verdict.kind = GenerationVerdict::kFinished, verdict;
  if (end.exit_code == kCommitLostExitCode) {
    return verdict.kind = GenerationVerdict::kCommitLost, verdict;
  }
  for (const auto& named : {end.named_by_mpirun, end.named_by_wrapper}) {
    if (IsFailure(named) && !Handled(in_place, named->rank)) {
      verdict.kind = GenerationVerdict::kRankFailed;
      verdict.failed = named;
      return verdict;
    }
  }
  std::vector<int> hung;
  for (int rank : end.stalled_ranks) {
    if (!Handled(in_place, rank)) hung.push_back(rank);
  }
  bool reset = end.exit_code == kResetExitCode || end.exit_code == 128 + SIGUSR1;
  if (reset && !hung.empty()) {
    verdict.kind = GenerationVerdict::kRanksHung;
    verdict.hung = hung;
  } else if (reset && update_sent) {
    verdict.kind = GenerationVerdict::kRequestedReset;
  } else if (!in_place.handled.empty()) {
    bool finished = !reset && !update_sent && !in_place.below_min_np && hung.empty() &&
                    ExitCodeOfAHandledRank(in_place, end.exit_code);
    verdict.kind = finished ? GenerationVerdict::kFinished
                            : GenerationVerdict::kAfterInPlaceFailures;
  }
  return verdict;
}

}  // namespace horde::launcher

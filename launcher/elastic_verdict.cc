#include "launcher/elastic_verdict.h"

#include <signal.h>

#include "launcher/elastic_exit_codes.h"

namespace horde::launcher {
namespace {

// A death by SIGUSR1 is horderun's host update come before the rank's handler.
bool IsFailure(const std::optional<RankEnd>& end) {
  if (!end) return false;
  if (end->signaled) return end->number != SIGUSR1;
  return end->number != 0 && end->number != kResetExitCode && end->number != kCommitLostExitCode;
}

}  // namespace

GenerationVerdict Judge(const GenerationEnd& end, bool update_sent) {
  GenerationVerdict verdict;
  if (end.exit_code == 0) return verdict.kind = GenerationVerdict::kFinished, verdict;
  if (end.exit_code == kCommitLostExitCode) {
    return verdict.kind = GenerationVerdict::kCommitLost, verdict;
  }
  for (const auto& named : {end.named_by_mpirun, end.named_by_wrapper}) {
    if (IsFailure(named)) {
      verdict.kind = GenerationVerdict::kRankFailed;
      verdict.failed = named;
      return verdict;
    }
  }
  bool reset = end.exit_code == kResetExitCode || end.exit_code == 128 + SIGUSR1;
  if (reset && !end.stalled_ranks.empty()) {
    verdict.kind = GenerationVerdict::kRanksHung;
    verdict.hung = end.stalled_ranks;
  } else if (reset && update_sent) {
    verdict.kind = GenerationVerdict::kRequestedReset;
  }
  return verdict;
}

}  // namespace horde::launcher

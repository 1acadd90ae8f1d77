#pragma once

#include <optional>
#include <vector>

#include "launcher/elastic_services.h"

namespace horde::launcher {

// What a generation's end means for the job: who, if anyone, is to blame.
struct GenerationVerdict {
  enum Kind {
    kFinished,        // every rank exited 0
    kCommitLost,      // the ranks found no commit of the job (kCommitLostExitCode)
    kRankFailed,      // `failed` died or exited with an error
    kRanksHung,       // the ranks reset, and the stall report names `hung`
    kRequestedReset,  // the ranks re-formed after the host update horderun sent
    kUnexplained,     // nothing names a rank: mpirun could not start, or a daemon died
  } kind = kUnexplained;
  std::optional<RankEnd> failed;
  std::vector<int> hung;
};

// The rule: a failure that mpirun names comes first (the first rank to fail; never one
// it stopped itself), then the first exit wrapper's line (the wrappers do not report
// ranks that died of a signal passed on to them), whatever exit code mpirun passed on:
// the other ranks of a failed generation leave with the reset code. A reset with no
// failed rank blames the ranks the stall report names, if any.
GenerationVerdict Judge(const GenerationEnd& end, bool update_sent);

}  // namespace horde::launcher

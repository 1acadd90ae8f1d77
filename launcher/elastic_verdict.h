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
    // In place: the generation ended after failures already handled while it ran (the
    // survivors fell below --min-np and left to re-form, or could not go on).
    kAfterInPlaceFailures,
  } kind = kUnexplained;
  std::optional<RankEnd> failed;
  std::vector<int> hung;
};

// The failures of a generation running in place that were handled while it ran (counted,
// their hosts left out): its end must not blame them again.
struct InPlaceRecord {
  std::vector<RankEnd> handled;  // each rank once
  bool below_min_np = false;     // the survivors are fewer than --min-np
};

// The rule: a failure that mpirun names comes first (the first rank to fail; never one
// it stopped itself), then the first exit wrapper's line (the wrappers do not report
// ranks that died of a signal passed on to them), whatever exit code mpirun passed on:
// the other ranks of a failed generation leave with the reset code. A reset with no
// failed rank blames the ranks the stall report names, if any.
//
// In place, the ranks of `in_place.handled` are blamed no more. A generation that had such
// failures and ends with nothing else to blame is finished when mpirun's exit code is
// one of a handled rank's (prterun may pass on a dead rank's status although the others
// went on and exited 0), unless the survivors were too few, the ranks reset, or a host
// update was sent; otherwise it ends kAfterInPlaceFailures.
GenerationVerdict Judge(const GenerationEnd& end, bool update_sent,
                        const InPlaceRecord& in_place = {});

}  // namespace horde::launcher

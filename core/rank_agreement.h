#pragma once

#include <string>

#include "core/rank_names.h"
#include "core/transport.h"
#include "horde/status.h"

namespace horde {

// Whether every rank can go on with an operation that all are about to start together
// (its output allocated, its buffers grown, a joined rank's identity made): a rank that
// cannot would leave the others inside the collective forever, so all start or none
// does. Collective over `transport`; `local` is how this rank's preparation went.
//
// Returns `local` on a rank that failed. On the others, when some rank failed, an error
// naming `what`, each failed rank and its reason, e.g.
//   allgather 'x' did not run on any rank: rank 1: could not allocate 64 GiB ...
// The common case (all succeeded) costs one allreduce of a bit per rank; the reasons
// travel (a gather and a broadcast) only after a failure.
Status AgreeAllSucceeded(Transport* transport, const Status& local, const std::string& what,
                         const RankNames& names = RankNames());

}  // namespace horde

#pragma once

#include <string>
#include <vector>

#include "horde/status.h"
#include "topology/link_matrix.h"

namespace horde {

// Maps a link matrix read from a file onto the job. `rank_hosts[r]` is the host rank r runs
// on. The result has one row per rank when every host runs one rank; with several ranks a
// host (as many on each), one row per host, in the order of the hosts' first ranks: the
// order of MPI's communicator across hosts, which the hierarchical allreduce runs the plan
// over. A matrix that names its hosts (a `hosts` line, as `horderun --probe-topology`
// writes) is mapped by name, whatever order the launcher placed the hosts in, leaving out
// rows of hosts the job does not use. A matrix without names has one row per rank in rank
// order (ranks sharing a host included), or one per host in the order above.
// Errors say what is wrong without naming the file (the caller does).
Status MatchLinkMatrixToJob(const LinkMatrix& file, const std::vector<std::string>& rank_hosts,
                            LinkMatrix* out);

}  // namespace horde

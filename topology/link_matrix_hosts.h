#pragma once

#include <string>
#include <vector>

#include "horde/status.h"
#include "topology/link_matrix.h"

namespace horde {

// Maps a link matrix read from a file onto the job's ranks. A matrix that names its hosts
// (a `hosts` line, as `horderun --probe-topology` writes) is mapped by name: each rank
// takes the row of the host it runs on, whatever order the launcher placed the hosts in,
// and rows of hosts the job does not use are left out. A matrix without names has one
// row per rank, in rank order. `rank_hosts[r]` is the host rank r runs on. Errors say
// what is wrong without naming the file (the caller does).
Status MatchLinkMatrixToRanks(const LinkMatrix& file, const std::vector<std::string>& rank_hosts,
                              LinkMatrix* out);

}  // namespace horde

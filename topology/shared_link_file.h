#pragma once

#include <string>

#include "core/transport.h"
#include "horde/status.h"
#include "topology/link_matrix.h"

namespace horde {

// The link matrix file of HORDE_TOPOLOGY=FILE, which every rank reads from its own host's
// copy. Ranks that planned from different matrices would run different trees and hang or
// exchange wrong sizes, so the copies are compared (a digest of each, gathered on rank 0)
// and the matrix is mapped onto the job by host name (topology/link_matrix_hosts.h).
// Collective over `transport`; `host` is the host this rank runs on. Every rank returns
// the same status, and on success the same matrix: one row per rank of the job, or per host
// when the hosts run several ranks each.
Status ReadSharedLinkFile(Transport* transport, const std::string& path, const std::string& host,
                          LinkMatrix* links);

}  // namespace horde

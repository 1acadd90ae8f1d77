#pragma once

#include "core/request.h"
#include "core/status.h"
#include "core/topology.h"

namespace horde {

// Checks a request for mistakes a rank can see on its own (bad root, a reduction the
// dtype does not have, a non-finite scale), so they fail at submit time with the reason,
// before any other rank is involved.
Status ValidateRequest(const Request& request, const Topology& topology);

}  // namespace horde

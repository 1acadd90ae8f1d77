#pragma once

#include <cstdint>
#include <vector>

#include "core/request.h"
#include "core/topology.h"
#include "horde/status.h"

namespace horde {

// Checks a request for mistakes a rank can see on its own (bad root, a reduction the
// dtype does not have, a non-finite scale), so they fail at submit time with the reason,
// before any other rank is involved.
Status ValidateRequest(const Request& request, const Topology& topology);

// Checks an alltoall's splits (the rows sent to each rank): one per rank, none negative,
// summing to the first dimension. Empty splits ask for an even split, which this fills
// in, or fails if the first dimension is not a multiple of the world size.
Status ResolveAlltoallSplits(const Request& request, int world_size, std::vector<int64_t>* splits);

}  // namespace horde

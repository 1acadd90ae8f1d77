#pragma once

#include <vector>

#include "core/rank_names.h"
#include "core/request.h"
#include "core/response.h"

namespace horde {

// Turns the requests for one name (from every rank that has not joined) into the
// response all ranks will execute: a collective when they agree, or an error naming the
// tensor, the field that differs and each rank's value when they do not (ranks, root
// ranks included, named by `names`).
Response BuildResponse(const std::vector<Request>& requests, const std::vector<int>& joined_ranks,
                       const RankNames& names = RankNames());

}  // namespace horde

#pragma once

#include <cstdint>
#include <vector>

namespace horde {

// How reducescatter splits the first dimension among ranks (Horovod's rule): each rank
// gets first_dim / world_size rows, and the first first_dim % world_size ranks one more.
// Returns the rows of each rank, in rank order.
std::vector<int64_t> ReducescatterRows(int64_t first_dim, int world_size);

}  // namespace horde

#include "core/row_split.h"

namespace horde {

std::vector<int64_t> ReducescatterRows(int64_t first_dim, int world_size) {
  std::vector<int64_t> rows(world_size, first_dim / world_size);
  for (int64_t r = 0; r < first_dim % world_size; ++r) ++rows[r];
  return rows;
}

}  // namespace horde

#include "core/rank_names.h"

#include <algorithm>

namespace horde {

int RankNames::World(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= world_ranks_.size()) return rank;
  return world_ranks_[static_cast<size_t>(rank)];
}

std::string RankNames::List(const std::vector<int>& ranks) const {
  std::vector<int> world;
  for (int rank : ranks) world.push_back(World(rank));
  std::sort(world.begin(), world.end());
  std::string s = world.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < world.size();) {
    size_t last = i;
    while (last + 1 < world.size() && world[last + 1] == world[last] + 1) ++last;
    if (i > 0) s += ",";
    s += std::to_string(world[i]);
    if (last - i >= 2) {
      s += "-" + std::to_string(world[last]);
      i = last + 1;
    } else {
      ++i;
    }
  }
  return s;
}

}  // namespace horde

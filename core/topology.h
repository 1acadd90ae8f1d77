#pragma once

#include <vector>

namespace horde {

// Where this process sits: in the world, on its node, and among the nodes.
struct Topology {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  bool homogeneous = true;  // every node runs the same number of ranks
  // A process set's runtime: its ranks' world ranks, in order (rank and size above count
  // within the set). Empty for the world's.
  std::vector<int> world_ranks;
};

}  // namespace horde

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
  // Each rank's world rank, in order (rank and size above count within this runtime's
  // communicator): its rank in MPI_COMM_WORLD, the numbering the job was started with
  // and the launcher maps to hosts. A process set's ranks are some of them; after the
  // job has re-formed from its survivors (in-place elastic recovery) the whole job's
  // ranks are renumbered too. Empty when the ranks are numbered as the world is.
  std::vector<int> world_ranks;
  bool process_set = false;  // this runtime is a process set's, not the whole job's
};

}  // namespace horde

#include "mpi_ops/world_ranks.h"

#include <numeric>

namespace horde {
namespace mpi {

std::vector<int> WorldRanksOf(MPI_Comm comm) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int size = 0;
  MPI_Group_size(group, &size);
  std::vector<int> ranks(size), world_ranks(size, MPI_UNDEFINED);
  std::iota(ranks.begin(), ranks.end(), 0);
  MPI_Group_translate_ranks(group, size, ranks.data(), world, world_ranks.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return world_ranks;
}

bool NumberedAsWorld(const std::vector<int>& world_ranks) {
  for (size_t i = 0; i < world_ranks.size(); ++i) {
    if (world_ranks[i] != static_cast<int>(i)) return false;
  }
  return true;
}

}  // namespace mpi
}  // namespace horde

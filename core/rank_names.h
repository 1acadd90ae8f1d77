#pragma once

#include <string>
#include <vector>

namespace horde {

// How messages name ranks. A process set's runtime numbers its ranks 0..n-1, and a job
// re-formed from its survivors renumbers them, but users and horderun know them by their
// world (MPI_COMM_WORLD) ranks, so their messages translate; a runtime whose ranks are
// numbered as the world's names them as they are.
class RankNames {
 public:
  // The world: rank r is "rank r".
  RankNames() = default;
  // A process set, or the job after a shrink: rank r is world rank `world_ranks[r]`.
  explicit RankNames(std::vector<int> world_ranks) : world_ranks_(std::move(world_ranks)) {}

  int World(int rank) const;
  // "rank 3"
  std::string One(int rank) const { return "rank " + std::to_string(World(rank)); }
  // "rank 3", "ranks 1,4", "ranks 0-7,9": in ascending world ranks, runs of three or
  // more shortened.
  std::string List(const std::vector<int>& ranks) const;

 private:
  std::vector<int> world_ranks_;
};

}  // namespace horde

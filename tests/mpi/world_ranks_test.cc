// Ranks are named by their MPI_COMM_WORLD rank, the numbering horderun maps to hosts,
// also once the job's communicator numbers them otherwise (as after the survivors of a
// rank failure re-formed the job: mpi_ops/job_communicator.h). Without the fault-tolerant
// MPI a job cannot shrink, so the tests renumber it themselves (AdoptJobCommunicator)
// and check what the runtimes' contexts, and so their messages (core/rank_names.h),
// call each rank. Over real MPI processes on 2 to 4 ranks.
#include "mpi_ops/world_ranks.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "core/rank_names.h"
#include "mpi_ops/job_communicator.h"
#include "mpi_ops/mpi_context.h"

namespace horde {
namespace mpi {
namespace {

int WorldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int WorldSize() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// MPI_COMM_WORLD's ranks in reverse order: job rank r is world rank size-1-r.
MPI_Comm Reversed() {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, 0, WorldSize() - 1 - WorldRank(), &comm);
  return comm;
}

TEST(WorldRanksTest, OfTheWorldAndOfARenumberedCommunicator) {
  const int size = WorldSize();
  MPI_Comm same = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &same);
  EXPECT_TRUE(NumberedAsWorld(WorldRanksOf(same)));
  MPI_Comm_free(&same);
  MPI_Comm reversed = Reversed();
  std::vector<int> expected;
  for (int r = 0; r < size; ++r) expected.push_back(size - 1 - r);
  EXPECT_EQ(WorldRanksOf(reversed), expected);
  EXPECT_FALSE(NumberedAsWorld(WorldRanksOf(reversed)));
  MPI_Comm_free(&reversed);
}

// The job renumbered in reverse: the job's runtime and a process set's name each rank
// by its world rank, not by its rank in their communicators.
TEST(WorldRanksTest, ContextsOfARenumberedJobNameWorldRanks) {
  const int size = WorldSize();
  AdoptJobCommunicator(Reversed());
  std::shared_ptr<MpiContext> job;
  ASSERT_TRUE(MpiContext::Create(&job).ok());
  const Topology& topology = job->topology();
  EXPECT_EQ(topology.rank, size - 1 - WorldRank());
  EXPECT_FALSE(topology.process_set);
  const RankNames names(topology.world_ranks);
  EXPECT_EQ(names.One(topology.rank), "rank " + std::to_string(WorldRank()))
      << "the job's rank " << topology.rank << " is world rank " << WorldRank();
  EXPECT_EQ(names.One(0), "rank " + std::to_string(size - 1));

  // The set of job ranks 0 and 1: world ranks size-1 and size-2.
  std::shared_ptr<MpiContext> set;
  ASSERT_TRUE(MpiContext::CreateForRanks({0, 1}, &set).ok());
  if (WorldRank() >= size - 2) {
    ASSERT_NE(set, nullptr);
    EXPECT_TRUE(set->topology().process_set);
    EXPECT_EQ(set->topology().world_ranks, (std::vector<int>{size - 1, size - 2}));
    EXPECT_EQ(RankNames(set->topology().world_ranks).List({0, 1}),
              "ranks " + std::to_string(size - 2) + "," + std::to_string(size - 1));
  } else {
    EXPECT_EQ(set, nullptr);
  }
}

// World rank 0 gone, as after it failed: the survivors' job ranks 0..n-2 are world ranks
// 1..n-1, and messages say so.
TEST(WorldRanksTest, ContextOfAJobWithoutRankZeroNamesWorldRanks) {
  const int size = WorldSize();
  MPI_Comm survivors = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, WorldRank() == 0 ? MPI_UNDEFINED : 0, WorldRank(), &survivors);
  if (WorldRank() == 0) return;
  AdoptJobCommunicator(survivors);
  std::shared_ptr<MpiContext> job;
  ASSERT_TRUE(MpiContext::Create(&job).ok());
  EXPECT_EQ(job->topology().rank, WorldRank() - 1);
  const RankNames names(job->topology().world_ranks);
  std::vector<int> all;
  for (int r = 0; r < size - 1; ++r) all.push_back(r);
  const std::string expected = size == 2   ? "rank 1"
                               : size == 3 ? "ranks 1,2"
                                           : "ranks 1-" + std::to_string(size - 1);
  EXPECT_EQ(names.List(all), expected);
  EXPECT_EQ(names.One(0), "rank 1") << "the survivors' rank 0 was world rank 1";
}

}  // namespace
}  // namespace mpi
}  // namespace horde

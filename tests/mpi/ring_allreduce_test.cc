// The ring allreduce (mpi_ops/ring_allreduce.h) on its own, over real MPI processes:
// exact results for counts smaller than the ranks, not divisible by them, and of many
// segments, in integers and floats, the same bits on every rank, and calls one after
// another on the same ring; its first half alone as a reduce-scatter of uneven blocks.
#include "mpi_ops/ring_allreduce.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "tests/mpi/test_comm.h"

namespace horde {
namespace mpi {
namespace {

// Element i of rank r: small whole numbers, so that float sums are exact.
template <typename T>
T Value(int rank, int64_t i) {
  return static_cast<T>((i * 7 + rank * 13) % 101 - 50);
}

template <typename T>
void ExpectExactSums(RingAllreduce* ring, int64_t count, MPI_Datatype type) {
  std::vector<T> data(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) data[i] = Value<T>(g_rank, i);
  ASSERT_TRUE(
      ring->Run(reinterpret_cast<char*>(data.data()), count, sizeof(T), type, MPI_SUM).ok());
  for (int64_t i = 0; i < count; ++i) {
    T expected = 0;
    for (int r = 0; r < g_size; ++r) expected += Value<T>(r, i);
    ASSERT_EQ(data[i], expected) << "element " << i << " of " << count;
  }
}

// Blocks of every rank: empty, one element, uneven, and of several segments.
TEST(RingAllreduce, ReduceScatterLeavesEachRankItsBlockSummed) {
  RingAllreduce ring(g_comm, g_rank, g_size, RingAllreduce::Tags::kReduceScatter);
  const int64_t per_segment = RingAllreduce::kSegmentBytes / 8;
  for (int64_t base : {int64_t{0}, int64_t{1}, 3 * per_segment + 5}) {
    std::vector<int64_t> blocks;
    for (int r = 0; r < g_size; ++r) blocks.push_back(base + r % 3);
    int64_t total = 0, mine = 0;
    for (int r = 0; r < g_size; ++r) {
      if (r == g_rank) mine = total;
      total += blocks[r];
    }
    std::vector<int64_t> data(static_cast<size_t>(total));
    for (int64_t i = 0; i < total; ++i) data[i] = Value<int64_t>(g_rank, i);
    ASSERT_TRUE(ring.RunReduceScatter(reinterpret_cast<char*>(data.data()), blocks, sizeof(int64_t),
                                      MPI_INT64_T, MPI_SUM)
                    .ok());
    for (int64_t i = mine; i < mine + blocks[g_rank]; ++i) {
      int64_t expected = 0;
      for (int r = 0; r < g_size; ++r) expected += Value<int64_t>(r, i);
      ASSERT_EQ(data[i], expected) << "element " << i << " with blocks of " << base;
    }
  }
}

TEST(RingAllreduce, SumsExactlyForEveryShapeOfBuffer) {
  RingAllreduce ring(g_comm, g_rank, g_size);
  // Fewer elements than ranks, not divisible by them, one segment, several segments
  // per chunk with a short last one.
  const int64_t per_segment = RingAllreduce::kSegmentBytes / 4;
  for (int64_t count :
       {int64_t{1}, int64_t{g_size - 1}, int64_t{1001}, per_segment * g_size * 3 + 5}) {
    ExpectExactSums<float>(&ring, count, MPI_FLOAT);
    ExpectExactSums<int32_t>(&ring, count, MPI_INT32_T);
    ExpectExactSums<double>(&ring, count, MPI_DOUBLE);
  }
}

TEST(RingAllreduce, EveryRankEndsWithTheSameBits) {
  RingAllreduce ring(g_comm, g_rank, g_size);
  const int64_t count = 300000;
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i) data[i] = 1.0f / static_cast<float>(i + g_rank + 3);
  ASSERT_TRUE(ring.Run(reinterpret_cast<char*>(data.data()), count, 4, MPI_FLOAT, MPI_SUM).ok());
  std::vector<float> first(data);
  MPI_Bcast(first.data(), static_cast<int>(count), MPI_FLOAT, 0, g_comm);
  EXPECT_EQ(data, first);
}

}  // namespace
}  // namespace mpi
}  // namespace horde

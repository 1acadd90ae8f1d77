// The sharded optimizer's layout (core/shard_layout.h): buckets by group and element type
// up to a cap, padded to the ranks, every element of every tensor in exactly one place.
#include "core/shard_layout.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace horde {
namespace {

using Member = ShardBucket::Member;

ShardedTensor Floats(int64_t numel, int group = 0) { return {numel, group, 0, 4}; }

void ExpectMember(const Member& member, size_t tensor, int64_t tensor_offset, int64_t offset,
                  int64_t numel) {
  EXPECT_EQ(member.tensor, tensor);
  EXPECT_EQ(member.tensor_offset, tensor_offset);
  EXPECT_EQ(member.offset, offset);
  EXPECT_EQ(member.numel, numel);
}

TEST(ShardLayout, PacksTensorsInOrderAndPadsToTheRanks) {
  const auto buckets = LayOutShards({Floats(10), Floats(7), Floats(3)}, 3, 1 << 20);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].numel, 21);  // 20 elements, padded to a multiple of 3
  EXPECT_EQ(buckets[0].shard_numel, 7);
  ASSERT_EQ(buckets[0].members.size(), 3u);
  ExpectMember(buckets[0].members[0], 0, 0, 0, 10);
  ExpectMember(buckets[0].members[1], 1, 0, 10, 7);
  ExpectMember(buckets[0].members[2], 2, 0, 17, 3);
}

TEST(ShardLayout, GroupsAndElementTypesGetBucketsOfTheirOwn) {
  const auto buckets = LayOutShards({Floats(4), Floats(4, 1), {4, 1, 1, 8}, Floats(2, 1)}, 2,
                                    1 << 20);
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0].group, 0);
  EXPECT_EQ(buckets[1].group, 1);
  EXPECT_EQ(buckets[2].kind, 1);
  EXPECT_EQ(buckets[3].group, 1);
  EXPECT_EQ(buckets[3].kind, 0);
}

TEST(ShardLayout, ATensorLargerThanTheRoomLeftSpansBuckets) {
  // A cap of 4 floats on 2 ranks: 10 elements take 4 + 4 + 2, and the next tensor fills
  // the third bucket before opening a fourth.
  const auto buckets = LayOutShards({Floats(10), Floats(3)}, 2, 16);
  ASSERT_EQ(buckets.size(), 4u);
  ExpectMember(buckets[0].members[0], 0, 0, 0, 4);
  ExpectMember(buckets[1].members[0], 0, 4, 0, 4);
  ExpectMember(buckets[2].members[0], 0, 8, 0, 2);
  ExpectMember(buckets[2].members[1], 1, 0, 2, 2);
  ExpectMember(buckets[3].members[0], 1, 2, 0, 1);
  EXPECT_EQ(buckets[3].numel, 2);
}

TEST(ShardLayout, ACapBelowOneElementARankIsRaisedAndEmptyTensorsAreLeftOut) {
  const auto buckets = LayOutShards({Floats(0), Floats(5), Floats(0)}, 4, 1);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].numel, 4);
  EXPECT_EQ(buckets[0].shard_numel, 1);
  EXPECT_EQ(buckets[1].numel, 4);  // one element, padded
  ExpectMember(buckets[1].members[0], 1, 4, 0, 1);
}

TEST(ShardLayout, EveryElementLiesInExactlyOnePlace) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int ranks = 1 + static_cast<int>(random() % 5);
    std::vector<ShardedTensor> tensors;
    for (int t = static_cast<int>(random() % 8); t >= 0; --t) {
      tensors.push_back(Floats(random() % 40, static_cast<int>(random() % 2)));
    }
    const int64_t cap = 4 * (1 + random() % 30);
    std::vector<std::vector<int>> seen(tensors.size());
    for (size_t t = 0; t < tensors.size(); ++t) seen[t].assign(tensors[t].numel, 0);
    for (const ShardBucket& bucket : LayOutShards(tensors, ranks, cap)) {
      EXPECT_EQ(bucket.numel % ranks, 0);
      EXPECT_LE(bucket.numel, std::max<int64_t>(cap / 4 / ranks, 1) * ranks);
      int64_t next = 0;
      for (const Member& member : bucket.members) {
        EXPECT_EQ(member.offset, next);
        EXPECT_EQ(tensors[member.tensor].group, bucket.group);
        next += member.numel;
        for (int64_t e = 0; e < member.numel; ++e) ++seen[member.tensor][member.tensor_offset + e];
      }
      EXPECT_GT(bucket.numel, next - ranks);
    }
    for (const auto& counts : seen) {
      for (int count : counts) EXPECT_EQ(count, 1);
    }
  }
}

}  // namespace
}  // namespace horde

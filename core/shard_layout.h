#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace horde {

// How a sharded optimizer lays its parameters out (ZeRO): the parameters, in order, are
// packed into flat buckets of at most a byte cap, a bucket holding parameters of one
// optimizer group and one element type only; every bucket is padded to a multiple of the
// ranks, and rank r owns the r-th of its equal slices. So each rank holds the same number
// of bytes of every bucket (balanced by bytes, not by parameters), a parameter may span
// ranks and, when larger than the room left in a bucket, buckets. A reduce-scatter of a
// bucket gives each rank its slice; an allgather of the slices gives the bucket back.
struct ShardedTensor {
  int64_t numel = 0;
  int group = 0;  // the optimizer's parameter group
  int kind = 0;   // the element type, as the caller numbers them
  int64_t element_size = 4;
};

struct ShardBucket {
  // Elements [tensor_offset, tensor_offset + numel) of tensor `tensor`, at `offset`.
  struct Member {
    size_t tensor = 0;
    int64_t tensor_offset = 0;
    int64_t offset = 0;
    int64_t numel = 0;
  };
  int group = 0;
  int kind = 0;
  std::vector<Member> members;
  int64_t numel = 0;        // padded: a multiple of the ranks
  int64_t shard_numel = 0;  // numel / ranks: each rank's slice
};

// Buckets of at most `cap_bytes` (at least one element a rank: a smaller cap is raised to
// it). Tensors without elements are in no bucket.
std::vector<ShardBucket> LayOutShards(const std::vector<ShardedTensor>& tensors, int ranks,
                                      int64_t cap_bytes);

}  // namespace horde

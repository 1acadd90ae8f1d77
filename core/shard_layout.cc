#include "core/shard_layout.h"

#include <algorithm>

namespace horde {
namespace {

// The most elements a bucket of this element size holds: the cap, rounded down to a
// multiple of the ranks, and at least one element a rank.
int64_t BucketElements(int64_t cap_bytes, int64_t element_size, int ranks) {
  const int64_t elements = cap_bytes / std::max<int64_t>(element_size, 1);
  return std::max<int64_t>(elements / ranks, 1) * ranks;
}

void Close(ShardBucket* bucket, int ranks, std::vector<ShardBucket>* buckets) {
  if (bucket->members.empty()) return;
  bucket->numel = (bucket->numel + ranks - 1) / ranks * ranks;
  bucket->shard_numel = bucket->numel / ranks;
  buckets->push_back(std::move(*bucket));
  *bucket = ShardBucket();
}

}  // namespace

std::vector<ShardBucket> LayOutShards(const std::vector<ShardedTensor>& tensors, int ranks,
                                      int64_t cap_bytes) {
  std::vector<ShardBucket> buckets;
  ShardBucket open;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const ShardedTensor& tensor = tensors[t];
    const int64_t room_at_most = BucketElements(cap_bytes, tensor.element_size, ranks);
    if (!open.members.empty() && (open.group != tensor.group || open.kind != tensor.kind)) {
      Close(&open, ranks, &buckets);
    }
    for (int64_t done = 0; done < tensor.numel;) {
      if (open.numel == room_at_most) Close(&open, ranks, &buckets);
      open.group = tensor.group;
      open.kind = tensor.kind;
      const int64_t numel = std::min(tensor.numel - done, room_at_most - open.numel);
      open.members.push_back({t, done, open.numel, numel});
      open.numel += numel;
      done += numel;
    }
  }
  Close(&open, ranks, &buckets);
  return buckets;
}

}  // namespace horde

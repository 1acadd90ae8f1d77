#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/shard_layout.h"

namespace horde {
namespace torch_ops {

// Where a sharded optimizer's parameters live: flat storage laid out as its buckets
// (core/shard_layout.h), each bucket a slice of it, and each parameter's data a view of its
// place there. So the allgather of the updated shards lands in the parameters themselves,
// with no copy out (as DeepSpeed's and FSDP's flat parameters do). The buckets of one
// parameter group and element type are one storage: a parameter spanning buckets is
// contiguous in it (the layout pads a bucket only where no parameter crosses its end).
//
// A parameter that is not a view of its place is copied in before each step (`Sync`) and
// out after the allgather (`Landed`): one the user gave new data (`p.data = ...`, which
// `Sync` makes a view again) or one that is not contiguous (channels_last), which keeps
// its own memory and layout.
class ParameterStorage {
 public:
  // Copies the parameters into the storage and makes the contiguous ones views of it.
  // names[i]: params[i]'s name, for errors.
  ParameterStorage(const std::vector<at::Tensor>& params, const std::vector<ShardBucket>& buckets,
                   const std::vector<std::string>& names);

  // Bucket b's elements (padding included).
  const at::Tensor& bucket(size_t b) const { return buckets_[b]; }
  // Parameter i's elements when the optimizer was made (0: none, in no bucket).
  int64_t numel(size_t i) const { return places_[i].defined() ? places_[i].numel() : 0; }
  // Makes the storage hold every parameter's current value (see above). Returns what is
  // wrong, else "": a parameter whose shape changed, left out.
  std::string Sync(const std::vector<at::Tensor>& params) const;
  // Bucket b's elements have landed: the parameters whose last elements are in it are
  // up to date once those that are not views of their place are copied out; each one's
  // version counter moves on, so that autograd refuses a backward that saved its old
  // value.
  void Landed(size_t b, const std::vector<at::Tensor>& params) const;

 private:
  bool IsView(size_t i, const at::Tensor& param) const;

  std::vector<at::Tensor> buckets_;             // views of the storage, one per bucket
  std::vector<at::Tensor> places_;              // per parameter, shaped like it
  std::vector<std::vector<size_t>> ending_in_;  // per bucket: the parameters ending in it
  std::vector<std::string> names_;
};

}  // namespace torch_ops
}  // namespace horde

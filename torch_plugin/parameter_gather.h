#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <exception>
#include <map>
#include <vector>

#include "core/shard_layout.h"
#include "torch_plugin/operation_table.h"

namespace horde {
namespace torch_ops {

// The allgathers that bring a sharded step's updated slices back into the parameters. All
// buckets are posted at once; a bucket is written into its parameters when it is waited
// for, in bucket order, so the writes can wait until the next forward reaches the
// parameters while later buckets still travel. After a bucket fails nothing more is
// written (a parameter may span it), and the failure is thrown once every bucket has been
// waited for, so nothing is left in flight.
class ParameterGather {
 public:
  // handles[b]: bucket b's allgather, landing in a whole-bucket tensor. `buckets` and
  // `params` must outlive this.
  ParameterGather(const std::vector<ShardBucket>& buckets, const std::vector<at::Tensor>& params,
                  std::vector<HandleId> handles);
  ~ParameterGather();  // releases the allgathers never waited for
  ParameterGather(const ParameterGather&) = delete;
  ParameterGather& operator=(const ParameterGather&) = delete;

  // Waits for the buckets up to `last` and writes them out. Throws the first failure.
  void FinishThrough(size_t last);
  // Whether bucket `b` has been waited for.
  bool finished(size_t b) const { return b < next_; }
  bool done() const { return next_ == handles_.size(); }

 private:
  // Writes bucket b's gathered elements into its parameters; a piece of a non-contiguous
  // parameter goes into its flat copy in pieces_, copied in once its last piece is there.
  void WriteOut(size_t b, const at::Tensor& gathered);

  const std::vector<ShardBucket>& buckets_;
  const std::vector<at::Tensor>& params_;
  std::vector<HandleId> handles_;
  size_t next_ = 0;  // the first bucket not waited for
  std::map<size_t, at::Tensor> pieces_;
  std::exception_ptr failure_;
};

}  // namespace torch_ops
}  // namespace horde

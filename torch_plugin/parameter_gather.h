#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <exception>
#include <vector>

#include "torch_plugin/operation_table.h"
#include "torch_plugin/parameter_storage.h"

namespace horde {
namespace torch_ops {

// The allgathers that bring a sharded step's updated slices back into the parameters,
// each landing in its bucket of the parameters' storage. All buckets are posted at once
// and waited for in bucket order, so the next forward can wait for the buckets of the
// parameters it reaches while later buckets still travel. A bucket that landed is
// written (ParameterStorage::Landed). After one fails every bucket is waited for (nothing
// is left in flight; those that landed are written: the ranks agree on which did) and
// then the first failure is thrown. A bucket whose allgather failed keeps its old values,
// unless MPI failed while moving its bytes (a lost rank: elastic training restores the
// parameters from its last commit).
class ParameterGather {
 public:
  // handles[b]: bucket b's allgather. `storage` and `params` must outlive this.
  ParameterGather(const ParameterStorage& storage, const std::vector<at::Tensor>& params,
                  std::vector<HandleId> handles);
  ~ParameterGather();  // releases the allgathers never waited for
  ParameterGather(const ParameterGather&) = delete;
  ParameterGather& operator=(const ParameterGather&) = delete;

  // Waits for the buckets up to `last` and writes them. Throws the first failure.
  void FinishThrough(size_t last);
  // Whether bucket `b` has been waited for.
  bool finished(size_t b) const { return b < next_; }
  bool done() const { return next_ == handles_.size(); }

 private:
  const ParameterStorage& storage_;
  const std::vector<at::Tensor>& params_;
  std::vector<HandleId> handles_;
  size_t next_ = 0;  // the first bucket not waited for
  std::exception_ptr failure_;
};

}  // namespace torch_ops
}  // namespace horde

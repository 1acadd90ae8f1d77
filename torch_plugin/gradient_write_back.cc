// How GradientReducer writes a step's reduced gradients back into .grad: dense ones in
// place (or decompressed, or back to their sparse layout), sparse ones rebuilt from the
// allgathered indices and values.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <utility>

#include "torch_plugin/gradient_reducer.h"
#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {

void GradientReducer::WriteBackSparse(Slot& slot) {
  c10::NoGradGuard no_grad;
  at::Tensor indices;
  const HandleId values_handle = std::exchange(slot.values_handle, -1);
  try {
    indices = torch_ops::Synchronize(std::exchange(slot.indices_handle, -1));
  } catch (...) {
    // Waited for even when the indices failed: the next step reuses its name.
    WaitAndDiscard(values_handle);
    throw;
  }
  at::Tensor values = torch_ops::Synchronize(values_handle);
  if (options_.op == ReduceOp::kAverage) values = values / SetSize();
  slot.param.mutable_grad() = at::sparse_coo_tensor(indices.t(), values, slot.sent.sizes());
}

void GradientReducer::WriteBack(Slot& slot, size_t i) {
  c10::NoGradGuard no_grad;
  at::Tensor output = slot.sent;
  if (options_.compressor) output = options_.compressor->Decompress(i, output, slot.param.grad());
  const int sparse_dim = slot.densified ? slot.densified : std::max(slot.layout, 0);
  if (sparse_dim) {
    slot.param.mutable_grad() = output.to_sparse(sparse_dim);
  } else if (!output.is_same(slot.param.grad())) {
    slot.param.grad().copy_(output);
  }
}

}  // namespace torch_ops
}  // namespace horde

// GradientReducer's agreement across ranks on each gradient's layout (dense, or sparse
// with which sparse_dim), and the zeros a rank reduces in that layout for a parameter
// that had no gradient in the step.
#include <ATen/core/Tensor.h>
#include <ATen/ops/sparse_coo_tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <vector>

#include "torch_plugin/gradient_reducer.h"
#include "torch_plugin/torch_ops.h"

namespace horde {
namespace torch_ops {

at::Tensor GradientReducer::ZeroGradient(size_t i, bool sparse) const {
  const at::Tensor& p = slots_[i].param;
  const int sparse_dim = sparse ? std::max(slots_[i].layout, 0) : 0;
  if (sparse_dim == 0) return at::zeros_like(p);
  std::vector<int64_t> value_shape{0};
  for (int64_t d = sparse_dim; d < p.dim(); ++d) value_shape.push_back(p.size(d));
  return at::sparse_coo_tensor(at::zeros({sparse_dim, 0}, p.options().dtype(at::kLong)),
                               at::zeros(value_shape, p.options()), p.sizes());
}

void GradientReducer::AgreeOnLayouts() {
  // Which gradients any rank has seen sparse (and their sparse_dim) or dense, so that a
  // rank without a gradient reduces zeros the same way as the others.
  at::Tensor seen = at::zeros({static_cast<int64_t>(slots_.size()), 2});
  auto marks = seen.accessor<float, 2>();
  for (size_t i = 0; i < slots_.size(); ++i) {
    const at::Tensor& grad = slots_[i].param.grad();
    if (!grad.defined()) continue;
    if (grad.is_sparse()) {
      marks[i][1] = static_cast<float>(grad.sparse_dim());
    } else {
      marks[i][0] = 1;
    }
  }
  torch_ops::Synchronize(AllreduceInPlaceAsync(seen, "horde.optimizer.gradient_layouts",
                                               ReduceOp::kMax, 1.0, 1.0, options_.process_set));
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (marks[i][1] > 0) {
      slots_[i].layout = static_cast<int>(marks[i][1]);
    } else if (marks[i][0] > 0) {
      slots_[i].layout = 0;
    }
  }
}

}  // namespace torch_ops
}  // namespace horde

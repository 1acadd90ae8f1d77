#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torch {
namespace autograd {
struct Node;
}  // namespace autograd
}  // namespace torch

namespace horde {
namespace torch_ops {

// Calls on_accumulated(i) each time backward has added a pass's gradient into params[i]'s
// .grad (a post-hook on the parameter's gradient accumulator), until destroyed: how the
// optimizers start a gradient's reduction while the rest of backward runs, without
// entering Python. The hooks may run on autograd's device threads.
class AccumulatedHooks {
 public:
  // Throws horde::Error (kInvalidArgument): "<who>: parameter '<names[i]>' has no
  // gradient accumulator ..." for a parameter that is not a leaf requiring grad.
  AccumulatedHooks(const std::vector<at::Tensor>& params, const std::vector<std::string>& names,
                   const std::string& who, std::function<void(size_t)> on_accumulated);
  ~AccumulatedHooks();
  AccumulatedHooks(const AccumulatedHooks&) = delete;
  AccumulatedHooks& operator=(const AccumulatedHooks&) = delete;

 private:
  // Held here: the parameter keeps only a weak reference to its accumulator, and a new
  // one (without the hook) would replace it once the graph is gone.
  std::vector<std::shared_ptr<::torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> keys_;
};

}  // namespace torch_ops
}  // namespace horde

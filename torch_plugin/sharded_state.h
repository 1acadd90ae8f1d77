#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <vector>

#include "torch_plugin/parameter_shards.h"

namespace horde {
namespace torch_ops {

// A sharded optimizer's state in a plain optimizer's terms, for checkpoints. The sharded
// optimizer steps one flat slice per bucket of `shards`; `whole` is an optimizer of the
// same type over the whole trainable parameters: params[i] (in optimizer group groups[i])
// is the i-th parameter of whole's groups, in order, of the same shape. Each parameter's
// state goes through its own serialize(), so any optimizer whose per-parameter state is
// tensors shaped like the parameter plus scalars (SGD, Adam, AdamW, RMSprop, Adagrad) is
// handled alike. Throws horde::Error (kInvalidArgument) when `whole` does not match.

// Collective over the shards' process set: gathers every parameter's whole state on
// every rank and, where `write` is true, replaces whole's state and its groups' options
// with it.
void GatherWholeState(const ParameterShards& shards, const ::torch::optim::Optimizer& sharded,
                      const std::vector<at::Tensor>& params, const std::vector<int>& groups,
                      ::torch::optim::Optimizer& whole, bool write);

// Local: replaces sharded's state with this rank's slices of whole's, and its groups'
// options with whole's.
void ShardWholeState(const ParameterShards& shards, const ::torch::optim::Optimizer& whole,
                     const std::vector<at::Tensor>& params, const std::vector<int>& groups,
                     ::torch::optim::Optimizer& sharded);

}  // namespace torch_ops
}  // namespace horde

#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include <string>

#include "horde/process_set.h"

namespace horde {
namespace torch {

// Each helper runs among the ranks of `process_set` (default: every rank), and
// root_rank is a rank of the job in that set (see broadcast).

// Overwrites every tensor with root_rank's, in place: call it after building the model
// so that all ranks start from the same weights. Collective; names must match across
// ranks.
void broadcast_parameters(const ::torch::OrderedDict<std::string, at::Tensor>& named_tensors,
                          int root_rank, const ProcessSet& process_set = ProcessSet());
// A module's parameters and buffers (its whole state, e.g. batch norm's running stats).
void broadcast_parameters(const ::torch::nn::Module& module, int root_rank,
                          const ProcessSet& process_set = ProcessSet());
template <typename ModuleType>
void broadcast_parameters(const ::torch::nn::ModuleHolder<ModuleType>& module, int root_rank,
                          const ProcessSet& process_set = ProcessSet()) {
  broadcast_parameters(*module, root_rank, process_set);
}

// Gives every rank root_rank's optimizer state (e.g. momentum buffers, Adam's moments
// and step counts) and options (e.g. learning rates), as when resuming from a
// checkpoint that only the root loaded. An optimizer that has not stepped on the root
// has no state: then every rank's state is cleared and created alike at the first step.
// The optimizers must have the same type and parameter shapes on every rank.
void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root_rank,
                               const ProcessSet& process_set = ProcessSet());

}  // namespace torch
}  // namespace horde

#pragma once

#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include <string>
#include <vector>

namespace horde {
namespace torch_ops {

// The optimizer's trainable parameters in its order, their names from `named_parameters`
// (e.g. module->named_parameters()) and the index of each one's parameter group. Throws
// horde::Error (kInvalidArgument, the message starting with `who`) when one has no name.
void TrainableParameters(::torch::optim::Optimizer& optimizer,
                         const ::torch::OrderedDict<std::string, at::Tensor>& named_parameters,
                         const std::string& who, std::vector<at::Tensor>* params,
                         std::vector<std::string>* names, std::vector<int>* groups);

}  // namespace torch_ops
}  // namespace horde

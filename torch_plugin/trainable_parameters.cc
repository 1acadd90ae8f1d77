#include "torch_plugin/trainable_parameters.h"

#include <unordered_map>

#include "horde/error.h"

namespace horde {
namespace torch_ops {

void TrainableParameters(::torch::optim::Optimizer& optimizer,
                         const ::torch::OrderedDict<std::string, at::Tensor>& named_parameters,
                         const std::string& who, std::vector<at::Tensor>* params,
                         std::vector<std::string>* names, std::vector<int>* groups) {
  std::unordered_map<const void*, std::string> name_of;
  for (const auto& item : named_parameters) {
    name_of.emplace(item.value().unsafeGetTensorImpl(), item.key());
  }
  const auto& param_groups = optimizer.param_groups();
  for (size_t g = 0; g < param_groups.size(); ++g) {
    for (const at::Tensor& param : param_groups[g].params()) {
      if (!param.requires_grad()) continue;
      auto it = name_of.find(param.unsafeGetTensorImpl());
      if (it == name_of.end()) {
        throw Error(Status::InvalidArgument(
            who +
            ": a parameter of the optimizer is missing from named_parameters; pass "
            "every parameter it steps, e.g. module->named_parameters()"));
      }
      params->push_back(param);
      names->push_back(it->second);
      groups->push_back(static_cast<int>(g));
    }
  }
}

}  // namespace torch_ops
}  // namespace horde

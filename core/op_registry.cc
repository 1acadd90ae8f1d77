#include "core/op_registry.h"

namespace horde {

void OpRegistry::Register(OpType op, std::unique_ptr<CollectiveOp> implementation) {
  ops_[static_cast<size_t>(op)].push_back(std::move(implementation));
}

Status OpRegistry::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  for (auto& op : ops_[static_cast<size_t>(response.op)]) {
    if (op->Enabled(response, entries)) return op->Execute(entries, response);
  }
  return Status::PreconditionError(std::string("this build has no ") + OpTypeName(response.op) +
                                   " for tensors on " + DeviceName(response.device));
}

}  // namespace horde

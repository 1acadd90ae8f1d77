#include "core/op_registry.h"

#include "core/host_tensor.h"

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

Status OpRegistry::Zeros(DataType dtype, const TensorShape& shape, int32_t device,
                         std::shared_ptr<Tensor>* out) const {
  if (device == kCpuDevice) {
    *out = std::make_shared<HostTensor>(dtype, shape);
    return Status::Ok();
  }
  if (!device_zeros_) {
    return Status::PreconditionError("this build has no GPU path for zeros on " + DeviceName(device));
  }
  return device_zeros_(dtype, shape, device, out);
}

}  // namespace horde

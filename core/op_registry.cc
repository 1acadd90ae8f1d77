#include "core/op_registry.h"

#include <new>

#include "core/host_tensor.h"
#include "core/op_traits.h"
#include "core/reduce_identity.h"

namespace horde {

Status HostIdentity(DataType dtype, ReduceOp op, const TensorShape& shape, int32_t,
                    std::shared_ptr<Tensor>* out) {
  try {
    auto tensor = std::make_shared<HostTensor>(dtype, shape);
    FillHost(tensor->data(), NumElements(shape), IdentityOf(dtype, op));
    *out = std::move(tensor);
  } catch (const std::bad_alloc&) {
    return Status::Internal("could not allocate " +
                            std::to_string(NumElements(shape) * DataTypeSize(dtype)) +
                            " bytes of host memory");
  }
  return Status::Ok();
}

void OpRegistry::Register(OpType op, std::unique_ptr<CollectiveOp> implementation) {
  ops_[static_cast<size_t>(op)].push_back(std::move(implementation));
}

Status OpRegistry::CheckEveryOpImplemented() const {
  std::string missing;
  for (int i = 0; i < kNumOpTypes; ++i) {
    const OpTraits& traits = TraitsOf(static_cast<OpType>(i));
    if (!traits.has_implementation || !ops_[i].empty()) continue;
    missing += (missing.empty() ? "" : ", ") + std::string(traits.name);
  }
  if (missing.empty()) return Status::Ok();
  return Status::Internal("no implementation is registered for " + missing +
                          "; each operation needs at least one (mpi_ops/make_runtime.cc)");
}

Status OpRegistry::Execute(std::vector<TensorEntry>& entries, const Response& response) {
  for (auto& op : ops_[static_cast<size_t>(response.op)]) {
    if (op->Enabled(response, entries)) return op->Execute(entries, response);
  }
  return Status::PreconditionError(std::string("this build has no ") + OpTypeName(response.op) +
                                   " for tensors on " + DeviceName(response.device));
}

Status OpRegistry::Identity(DataType dtype, ReduceOp op, const TensorShape& shape, int32_t device,
                            std::shared_ptr<Tensor>* out) const {
  if (device == kCpuDevice) return host_identity_(dtype, op, shape, device, out);
  if (!device_identity_) {
    return Status::PreconditionError("this build has no GPU path for tensors on " +
                                     DeviceName(device));
  }
  return device_identity_(dtype, op, shape, device, out);
}

}  // namespace horde

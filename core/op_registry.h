#pragma once

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "core/collective_op.h"

namespace horde {

// Makes what a joined rank contributes to an allreduce: a tensor of `dtype` and `shape`
// on `device`, filled with the identity of `op` (core/reduce_identity.h).
using IdentityMaker = std::function<Status(DataType, ReduceOp op, const TensorShape&,
                                           int32_t device, std::shared_ptr<Tensor>*)>;

// The identity in host memory; an error (not an exception) when it cannot be allocated.
Status HostIdentity(DataType dtype, ReduceOp op, const TensorShape& shape, int32_t device,
                    std::shared_ptr<Tensor>* out);

// Per collective, implementations in priority order; the first enabled one runs. Also
// the one place that knows how to make a joined rank's tensors, in host memory and,
// when the build has a GPU path, in device memory.
class OpRegistry {
 public:
  // `host_identity` makes the host tensors (tests inject one that fails).
  explicit OpRegistry(IdentityMaker host_identity = HostIdentity)
      : host_identity_(std::move(host_identity)) {}

  void Register(OpType op, std::unique_ptr<CollectiveOp> implementation);
  // An error naming each operation that needs an implementation (core/op_traits.h) and
  // has none registered: a build that forgot one fails at startup, not at its first use.
  Status CheckEveryOpImplemented() const;
  Status Execute(std::vector<TensorEntry>& entries, const Response& response);

  void SetDeviceIdentity(IdentityMaker identity) { device_identity_ = std::move(identity); }
  // The identity of `op` of `dtype` and `shape` on `device` (host memory for kCpuDevice).
  Status Identity(DataType dtype, ReduceOp op, const TensorShape& shape, int32_t device,
                  std::shared_ptr<Tensor>* out) const;

 private:
  std::array<std::vector<std::unique_ptr<CollectiveOp>>, kNumOpTypes> ops_;
  IdentityMaker host_identity_;
  IdentityMaker device_identity_;
};

}  // namespace horde

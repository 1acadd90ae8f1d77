#pragma once

#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "core/collective_op.h"

namespace horde {

// Makes a zero-filled tensor on a GPU (what a joined rank contributes to a GPU allreduce).
using DeviceZeros = std::function<Status(DataType, const TensorShape&, int32_t device, std::shared_ptr<Tensor>*)>;

// Per collective, implementations in priority order; the first enabled one runs. Also
// the one place that knows how to make device memory, when the build has a GPU path.
class OpRegistry {
 public:
  void Register(OpType op, std::unique_ptr<CollectiveOp> implementation);
  Status Execute(std::vector<TensorEntry>& entries, const Response& response);

  void SetDeviceZeros(DeviceZeros zeros) { device_zeros_ = std::move(zeros); }
  // Zeros of `dtype` and `shape` on `device` (host memory for kCpuDevice).
  Status Zeros(DataType dtype, const TensorShape& shape, int32_t device, std::shared_ptr<Tensor>* out) const;

 private:
  std::array<std::vector<std::unique_ptr<CollectiveOp>>, kNumOpTypes> ops_;
  DeviceZeros device_zeros_;
};

}  // namespace horde

#pragma once

#include <array>
#include <memory>
#include <vector>

#include "core/collective_op.h"

namespace horde {

// Per collective, implementations in priority order; the first enabled one runs.
class OpRegistry {
 public:
  void Register(OpType op, std::unique_ptr<CollectiveOp> implementation);
  Status Execute(std::vector<TensorEntry>& entries, const Response& response);

 private:
  std::array<std::vector<std::unique_ptr<CollectiveOp>>, kNumOpTypes> ops_;
};

}  // namespace horde

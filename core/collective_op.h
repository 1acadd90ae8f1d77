#pragma once

#include <vector>

#include "core/response.h"
#include "core/tensor.h"
#include "horde/status.h"

namespace horde {

// One implementation of one collective for one kind of memory (e.g. MPI allreduce of
// host tensors). Entries arrive in the response's name order.
class CollectiveOp {
 public:
  virtual ~CollectiveOp() = default;
  virtual bool Enabled(const Response& response, const std::vector<TensorEntry>& entries) const = 0;
  virtual Status Execute(std::vector<TensorEntry>& entries, const Response& response) = 0;
};

}  // namespace horde

#include "core/request_validator.h"

#include <cmath>
#include <sstream>

namespace horde {
namespace {

std::string Describe(const Request& r) {
  if (r.name.empty()) return std::string("unnamed ") + OpTypeName(r.op);
  return std::string(OpTypeName(r.op)) + " '" + r.name + "'";
}

Status ValidateAllreduce(const Request& r) {
  for (double factor : {r.prescale, r.postscale}) {
    if (!std::isfinite(factor)) {
      std::ostringstream msg;
      msg << Describe(r) << ": scale factor " << factor << " is not a finite number";
      return Status::InvalidArgument(msg.str());
    }
  }
  if (r.dtype == DataType::kBool) {
    if (r.reduce_op == ReduceOp::kAverage) {
      return Status::InvalidArgument(Describe(r) +
                                     ": Average is not defined for bool tensors; use Sum "
                                     "(logical or), Max, Min or Product (logical and)");
    }
    if (r.prescale != 1.0 || r.postscale != 1.0) {
      return Status::InvalidArgument(Describe(r) + ": bool tensors cannot be scaled");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ValidateRequest(const Request& r, const Topology& topology) {
  if (r.shape.size() > kMaxTensorDims) {
    return Status::InvalidArgument(Describe(r) + ": tensors may have at most " +
                                   std::to_string(kMaxTensorDims) + " dimensions, got " +
                                   std::to_string(r.shape.size()));
  }
  switch (r.op) {
    case OpType::kAllreduce:
      return ValidateAllreduce(r);
    case OpType::kBroadcast:
      if (r.root < 0 || r.root >= topology.size) {
        return Status::InvalidArgument(Describe(r) + ": root rank " + std::to_string(r.root) +
                                       " is out of range; expected 0 <= root_rank < " +
                                       std::to_string(topology.size));
      }
      return Status::Ok();
    case OpType::kAllgather:
    case OpType::kJoin:
      return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace horde

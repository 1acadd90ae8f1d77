#include "core/request_validator.h"

#include <cmath>
#include <sstream>

namespace horde {
namespace {

// How errors name the request: "allreduce 'x'", or "unnamed allreduce".
std::string RequestSummary(const Request& r) {
  if (r.name.empty()) return std::string("unnamed ") + OpTypeName(r.op);
  return std::string(OpTypeName(r.op)) + " '" + r.name + "'";
}

Status ValidateReduction(const Request& r) {
  for (double factor : {r.prescale, r.postscale}) {
    if (!std::isfinite(factor)) {
      std::ostringstream msg;
      msg << RequestSummary(r) << ": scale factor " << factor << " is not a finite number";
      return Status::InvalidArgument(msg.str());
    }
  }
  if (r.dtype == DataType::kBool) {
    if (r.reduce_op == ReduceOp::kAverage) {
      return Status::InvalidArgument(RequestSummary(r) +
                                     ": Average is not defined for bool tensors; use Sum "
                                     "(logical or), Max, Min or Product (logical and)");
    }
    if (r.prescale != 1.0 || r.postscale != 1.0) {
      return Status::InvalidArgument(RequestSummary(r) + ": bool tensors cannot be scaled");
    }
  }
  return Status::Ok();
}

bool IsPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Adasum pairs ranks by recursive halving (mpi_ops/mpi_adasum_allreduce.h), so it needs
// a power-of-two number of ranks, and its dot products only exist for floating types.
// Every rank of the set sees the same size and dtype, so all of them fail here alike.
Status ValidateAdasum(const Request& r, const Topology& topology) {
  if (!IsFloatingPoint(r.dtype)) {
    return Status::InvalidArgument(RequestSummary(r) + ": Adasum is not defined for " +
                                   DataTypeName(r.dtype) +
                                   " tensors; it supports float16, bfloat16, float32 and float64");
  }
  if (!IsPowerOfTwo(topology.size)) {
    return Status::Unimplemented(
        RequestSummary(r) + ": Adasum needs a power-of-two number of ranks, but the " +
        (topology.process_set ? "process set" : "job") + " has " + std::to_string(topology.size) +
        " ranks; expected 1, 2, 4, 8, ... ranks");
  }
  return Status::Ok();
}

Status RequireDimension(const Request& r) {
  if (!r.shape.empty()) return Status::Ok();
  return Status::InvalidArgument(RequestSummary(r) +
                                 ": a scalar has no first dimension to split; "
                                 "expected a tensor of at least one dimension");
}

Status ValidateReducescatter(const Request& r) {
  if (r.reduce_op == ReduceOp::kAdasum) {
    return Status::Unimplemented(RequestSummary(r) +
                                 ": Adasum is not supported for reducescatter (nor is it in "
                                 "Horovod); use allreduce with op=Adasum");
  }
  if (r.reduce_op != ReduceOp::kSum && r.reduce_op != ReduceOp::kAverage) {
    return Status::InvalidArgument(RequestSummary(r) + ": reduce op " + ReduceOpName(r.reduce_op) +
                                   " is not supported; reducescatter supports Sum and Average");
  }
  HORDE_RETURN_IF_ERROR(RequireDimension(r));
  return ValidateReduction(r);
}

}  // namespace

Status ValidateRequest(const Request& r, const Topology& topology) {
  if (r.shape.size() > kMaxTensorDims) {
    return Status::InvalidArgument(RequestSummary(r) + ": tensors may have at most " +
                                   std::to_string(kMaxTensorDims) + " dimensions, got " +
                                   std::to_string(r.shape.size()));
  }
  switch (r.op) {
    case OpType::kAllreduce:
      if (r.reduce_op == ReduceOp::kAdasum) HORDE_RETURN_IF_ERROR(ValidateAdasum(r, topology));
      return ValidateReduction(r);
    case OpType::kReducescatter: return ValidateReducescatter(r);
    case OpType::kAlltoall: return RequireDimension(r);
    case OpType::kBroadcast:
      if (r.root < 0 || r.root >= topology.size) {
        return Status::InvalidArgument(RequestSummary(r) + ": root rank " + std::to_string(r.root) +
                                       " is out of range; expected 0 <= root_rank < " +
                                       std::to_string(topology.size));
      }
      return Status::Ok();
    case OpType::kAllgather:
    case OpType::kJoin:
    case OpType::kBarrier: return Status::Ok();
  }
  return Status::Ok();
}

Status ResolveAlltoallSplits(const Request& r, int world_size, std::vector<int64_t>* splits) {
  HORDE_RETURN_IF_ERROR(RequireDimension(r));
  const int64_t rows = r.shape[0];
  if (splits->empty()) {
    if (rows % world_size != 0) {
      return Status::InvalidArgument(RequestSummary(r) + ": the first dimension (" +
                                     std::to_string(rows) + ") cannot be split evenly among " +
                                     std::to_string(world_size) +
                                     " ranks; pass splits, the rows to send to each rank");
    }
    splits->assign(world_size, rows / world_size);
    return Status::Ok();
  }
  if (splits->size() != static_cast<size_t>(world_size)) {
    return Status::InvalidArgument(
        RequestSummary(r) + ": splits has " + std::to_string(splits->size()) +
        " entries; expected one per rank (" + std::to_string(world_size) + ")");
  }
  int64_t total = 0;
  for (size_t j = 0; j < splits->size(); ++j) {
    const int64_t split = (*splits)[j];
    if (split < 0) {
      return Status::InvalidArgument(RequestSummary(r) + ": splits[" + std::to_string(j) + "] is " +
                                     std::to_string(split) + "; splits must not be negative");
    }
    total += split;
  }
  if (total != rows) {
    return Status::InvalidArgument(RequestSummary(r) + ": splits sum to " + std::to_string(total) +
                                   "; expected the first dimension of the tensor, " +
                                   std::to_string(rows));
  }
  return Status::Ok();
}

}  // namespace horde

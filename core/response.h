#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/op_type.h"
#include "core/tensor.h"
#include "horde/data_type.h"

namespace horde {

// The coordinator's decision: run one collective over one or more (fused) tensors,
// or fail them with a message. Every rank executes the same list in the same order.
struct Response {
  enum class Kind : uint8_t { kCollective = 0, kError = 1 };
  static constexpr int kNumKinds = 2;

  Kind kind = Kind::kCollective;
  OpType op = OpType::kAllreduce;
  std::vector<std::string> names;
  std::string error_message;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root = 0;  // broadcast: the root; join: the last rank to join
  int32_t device = kCpuDevice;
  // Allgather: first-dimension size of each rank's tensor, rank-major per name
  // (names.size() * world size entries).
  std::vector<int64_t> first_dims;
  // Allreduce: element count per name, so a rank that has joined (and holds no tensor
  // of that name) can contribute zeros of the right size.
  std::vector<int64_t> tensor_sizes;
  // Allreduce: some ranks have joined and contribute the identity of the reduce op,
  // which they must first make; every rank agrees that they could before it runs.
  bool with_joined = false;
  // kError: the ranks (the set's own numbers) whose requests it fails; empty: every rank
  // that asked. A rank not listed may already hold its next request of the same name,
  // which this response must leave alone.
  std::vector<int64_t> ranks;
};

// Whether `response` concerns this rank's operations: every collective does; an error
// only on the ranks it lists (all when it lists none).
inline bool Concerns(const Response& response, int rank) {
  if (response.kind != Response::Kind::kError || response.ranks.empty()) return true;
  for (int64_t r : response.ranks) {
    if (r == rank) return true;
  }
  return false;
}

struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;
  // With shutdown: the first failed rank's reason, e.g. "rank 1 failed: RuntimeError: boom".
  std::string shutdown_reason;
};

}  // namespace horde

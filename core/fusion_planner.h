#pragma once

#include <cstdint>
#include <vector>

#include "core/response.h"

namespace horde {

// Tensors in a fused buffer start at multiples of this many bytes.
constexpr int64_t kFusionAlignment = 64;

int64_t AlignToFusion(int64_t bytes);

// Offsets of tensors of the given sizes packed into one fusion buffer; `total` gets the
// buffer length the pack needs. Planner and executors share this so they agree.
std::vector<int64_t> FusionOffsets(const std::vector<int64_t>& sizes, int64_t* total);

// A response ready to run and the bytes of its tensor (one name each).
struct PlannedResponse {
  Response response;
  int64_t bytes = 0;
};

// Packs ready allreduce responses that share dtype, reduce op, scale factors and
// device into fused responses whose aligned size stays within the threshold. A tensor
// larger than the threshold runs alone, in place. Other responses pass through. The
// output keeps the order in which each fused group first appeared.
class FusionPlanner {
 public:
  explicit FusionPlanner(int64_t threshold_bytes) : threshold_(threshold_bytes) {}

  std::vector<Response> Plan(std::vector<PlannedResponse> ready) const;

 private:
  int64_t threshold_;
};

}  // namespace horde

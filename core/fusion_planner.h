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
// The same into `offsets` (replacing its contents, keeping its capacity).
void FusionOffsets(const std::vector<int64_t>& sizes, std::vector<int64_t>* offsets,
                   int64_t* total);

// A response ready to run and the bytes of its tensor (one name each): for an
// allgather, of its output (every rank's rows).
struct PlannedResponse {
  Response response;
  int64_t bytes = 0;
};

// Packs ready allreduce (or reducescatter) responses that share dtype, reduce op, scale
// factors and device, and ready allgathers that share dtype and device, into fused
// responses whose aligned size stays within the threshold. Fusion
// only pays for small tensors: it saves a collective's fixed cost but copies every
// byte in and out. So a tensor of `in_place_bytes` or more (or larger than the
// threshold) runs alone, in place. Other responses pass through. The output keeps the
// order in which each fused group first appeared.
class FusionPlanner {
 public:
  // Measured on a 2-core machine with Open MPI's shared-memory transport: a copy in and
  // out of 1 MiB costs about what one allreduce call's fixed cost saves.
  static constexpr int64_t kDefaultInPlaceBytes = 1 << 20;

  explicit FusionPlanner(int64_t threshold_bytes, int64_t in_place_bytes = kDefaultInPlaceBytes)
      : threshold_(threshold_bytes), in_place_bytes_(in_place_bytes) {}

  std::vector<Response> Plan(const std::vector<PlannedResponse>& ready);
  // The plan for ready[0, count) into `out` (replacing its contents), copied into the
  // responses already there: a caller that keeps `out` (and `ready`) from round to round
  // allocates nothing for rounds no larger than earlier ones.
  void Plan(const std::vector<PlannedResponse>& ready, size_t count, std::vector<Response>* out);

 private:
  // An output response being filled.
  struct Pack {
    int64_t end = 0;  // bytes used, the last tensor unpadded
    bool open = true;
  };

  int64_t threshold_;
  int64_t in_place_bytes_;
  std::vector<Pack> packs_;  // per output response of the current Plan()
  // Responses a smaller plan left over, kept (with their vectors' capacity) for a larger
  // one.
  std::vector<Response> spare_;
};

}  // namespace horde

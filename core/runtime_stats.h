#pragma once

#include <array>
#include <cstdint>

#include "core/op_type.h"

namespace horde {

// Counters of what the runtime has done since init(); a snapshot is cheap to copy.
struct RuntimeStats {
  int64_t negotiation_rounds = 0;
  int64_t slow_rounds = 0;  // rounds that gathered requests to the coordinator
  int64_t cache_hits = 0;   // responses that came from the response cache
  // The parameters in use (autotuning changes them) and whether autotuning has settled.
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  bool cache_enabled = true;
  bool autotune_settled = false;
  int64_t responses_executed = 0;
  int64_t error_responses = 0;
  int64_t fused_responses = 0;                 // collectives that carried more than one tensor
  int64_t fused_tensors = 0;                   // tensors that went through those
  std::array<int64_t, kNumOpTypes> tensors{};  // per OpType
  std::array<int64_t, kNumOpTypes> bytes{};    // per OpType, input bytes of this rank
};

}  // namespace horde

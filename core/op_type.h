#pragma once

#include <cstdint>

namespace horde {

// The collectives (and join). The numeric values are part of the wire format; each has
// one entry of rules in core/op_traits.h.
enum class OpType : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  // A rank that has run out of data; completes when every rank has joined.
  kJoin = 3,
  // Rank r sends its rows [offset_j, offset_j + splits_j) to rank j.
  kAlltoall = 4,
  // Reduces every rank's tensor and leaves rank r its share of the first dimension.
  kReducescatter = 5,
  // Completes once every rank has reached it.
  kBarrier = 6,
};
constexpr int kNumOpTypes = 7;

// E.g. "allgather" (core/op_traits.h holds it).
const char* OpTypeName(OpType op);

}  // namespace horde

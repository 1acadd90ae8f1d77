#pragma once

#include <cstdint>

#include "core/op_type.h"
#include "core/request.h"
#include "core/response.h"

namespace horde {

// The request fields, beyond operation, group, dtype and device (which every collective
// agrees on), that all ranks must give the same value. Checked in this order.
enum AgreedField : uint32_t {
  kAgreeRoot = 1u << 0,
  kAgreeShape = 1u << 1,
  kAgreeRowShape = 1u << 2,  // all but the first dimension
  kAgreeReduceOp = 1u << 3,
  kAgreeScale = 1u << 4,  // prescale and postscale
};

// How an operation fuses, and so which bytes the fusion planner counts for one tensor.
enum class Fusion : uint8_t {
  kNone,          // one tensor per response
  kTensor,        // its (agreed) tensor's bytes
  kGatheredRows,  // its output's: the agreed row size times every rank's rows
};

// Per-name data a response carries (one vector each); a fused response concatenates
// the names' in name order, and the cache splits them again (core/response_cache.h).
enum class PerName : uint8_t {
  kNothing,
  kTensorSize,     // Response::tensor_sizes: the element count
  kEveryRankRows,  // Response::first_dims: each rank's first dimension
};

// Everything the negotiation and the runtime treat differently per operation. A new
// collective is one entry in kOpTraits (core/op_traits.cc), in OpType order, and its
// implementations (core/collective_op.h).
struct OpTraits {
  OpType op;
  const char* name;  // OpTypeName: in errors, unnamed tensors' names and stats
  uint32_t agreed;   // AgreedField bits
  Fusion fusion;
  PerName per_name;
  // Runs while some ranks have joined: they contribute the identity of its reduce op.
  bool with_joined_ranks;
  // Its implementations record their own timeline phases (copies, the collective); for
  // the others the runtime records one phase named after the op, e.g. "ALLGATHER".
  bool records_own_phases;
  // Completes at the same point of every rank's program, a point to renumber unnamed
  // tensors from (core/numbering_epochs.h).
  bool renumbers;
  // Runs through an implementation in the OpRegistry (join completes in core/rank_join).
  bool has_implementation;
};

const OpTraits& TraitsOf(OpType op);

// The bytes the fusion planner counts for `response`, one tensor's, decided from `agreed`,
// a request every rank agreed with (the same on every rank).
int64_t FusionBytes(const Response& response, const Request& agreed);

}  // namespace horde

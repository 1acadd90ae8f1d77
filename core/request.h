#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/op_type.h"
#include "core/tensor.h"
#include "horde/data_type.h"

namespace horde {

using SteadyTime = std::chrono::steady_clock::time_point;

// The most dimensions a tensor may have (the wire format's limit).
constexpr size_t kMaxTensorDims = 64;

// The name every rank's join request carries.
constexpr const char* kJoinName = "join";

// What one rank asks for: the signature of one collective on one named tensor.
// The coordinator compares these across ranks before anything runs.
struct Request {
  int32_t rank = 0;
  std::string name;
  OpType op = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  TensorShape shape;
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root = 0;
  int32_t device = kCpuDevice;
  // Members of a grouped operation (same group name on every rank) are released
  // together once all group_size of them are ready. Empty: not grouped.
  std::string group;
  int32_t group_size = 0;
  // A name the runtime numbered (the caller gave none): the numbering epoch its number
  // belongs to (see Runtime::StartNumberingEpoch). -1: the caller named it.
  int32_t numbering_epoch = -1;
  // When this rank submitted it, on this rank's clock (never sent: clocks differ across
  // hosts); unset (the clock's epoch) until the runtime or the negotiator stamps it.
  SteadyTime submitted{};
  // How long this rank had waited for it when it sent it to the coordinator, which
  // counts a stall from the earliest submission (see core/stall_inspector.h).
  int64_t waited_microseconds = 0;
  // Where in the program this rank submitted it, e.g. "train.py:57" (see
  // torch_plugin/call_site.h), for stall reports and mismatch errors; empty: unknown.
  std::string call_site;

  int64_t size_bytes() const { return NumElements(shape) * DataTypeSize(dtype); }
  // The bytes of one row along the first dimension (a scalar is one row).
  int64_t row_bytes() const { return NumElements(RowShape(shape)) * DataTypeSize(dtype); }
};

// Everything one rank sends the coordinator in one round.
struct RequestList {
  std::vector<Request> requests;
  bool shutdown = false;
  // Why this rank is shutting down when it failed (e.g. "RuntimeError: boom"); empty
  // for a normal shutdown.
  std::string failure;
  // The rank's numbering epoch when the list was built: it has sent every numbered
  // request of the epochs before it (this list included).
  int32_t numbering_epoch = 0;
};

}  // namespace horde

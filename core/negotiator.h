#pragma once

#include <cstdint>
#include <functional>

#include "core/fusion_planner.h"
#include "core/message_table.h"
#include "core/request.h"
#include "core/response.h"
#include "core/stall_inspector.h"
#include "core/status.h"
#include "core/transport.h"

namespace horde {

// One negotiation round, run collectively by every rank: each rank's new requests are
// gathered to the coordinator (transport rank 0), which records them, builds responses
// for the names every rank has now asked for, fuses them, and broadcasts the ordered
// list. Every rank returns the same ResponseList. Shutdown travels as a flag: if any
// rank asks, the list says so and every rank leaves together. The coordinator also
// runs the stall inspector, which may add error responses for stalled names.
class Negotiator {
 public:
  // The coordinator's time source, injected so tests can step it.
  using Clock = std::function<SteadyTime()>;

  Negotiator(Transport* transport, int64_t fusion_threshold_bytes,
             StallSettings stall = StallSettings(),
             Clock clock = [] { return std::chrono::steady_clock::now(); })
      : transport_(transport),
        table_(transport->size()),
        planner_(fusion_threshold_bytes),
        inspector_(stall),
        clock_(std::move(clock)) {}

  Status RunRound(const RequestList& mine, ResponseList* out);

  // Names requested by some ranks but not yet by all (coordinator only).
  size_t pending_on_coordinator() const { return table_.pending(); }

 private:
  Status Coordinate(const std::vector<std::string>& gathered, ResponseList* out);

  Transport* transport_;
  MessageTable table_;
  FusionPlanner planner_;
  StallInspector inspector_;
  Clock clock_;
};

}  // namespace horde

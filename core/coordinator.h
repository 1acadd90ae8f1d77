#pragma once

#include <string>
#include <vector>

#include "core/fusion_planner.h"
#include "core/message_table.h"
#include "core/numbering_epochs.h"
#include "core/rank_names.h"
#include "core/response.h"
#include "core/stall_inspector.h"
#include "horde/status.h"

namespace horde {

// Rank 0's part of the slow path: it records every rank's uncached requests, builds
// responses for the names every rank has now asked for (checking that the ranks agree),
// fuses them, runs the stall inspector, and completes a join once every rank has joined.
class Coordinator {
 public:
  // `names` says how messages name this runtime's ranks.
  Coordinator(int world_size, int64_t fusion_threshold_bytes, const StallSettings& stall,
              RankNames names)
      : table_(world_size),
        planner_(fusion_threshold_bytes),
        inspector_(stall, names),
        epochs_(world_size),
        names_(std::move(names)) {}

  // `gathered` holds each rank's encoded RequestList, indexed by rank.
  Status Coordinate(const std::vector<std::string>& gathered, SteadyTime now, ResponseList* out);

  // Whether names are waiting for some ranks and one of them reaches a stall limit now,
  // so rank 0 asks for a round even when no rank has new requests.
  bool WantsRound(SteadyTime now) const;

  size_t pending() const { return table_.pending(); }
  void set_fusion_threshold(int64_t bytes) { planner_ = FusionPlanner(bytes); }

 private:
  MessageTable table_;
  FusionPlanner planner_;
  StallInspector inspector_;
  NumberingEpochs epochs_;
  RankNames names_;
};

}  // namespace horde

#pragma once

#include <string>
#include <vector>

#include "core/failed_names.h"
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
// A name that failed before every rank had asked for it fails the late ranks' requests
// too, when they come (FailedNames), so an operation that fails fails on every rank.
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
  // The ranks that have not asked for the name `error` fails (nor joined): they owe it.
  std::vector<int> Owing(const Response& error) const;

  MessageTable table_;
  FusionPlanner planner_;
  StallInspector inspector_;
  FailedNames failed_;
  NumberingEpochs epochs_;
  RankNames names_;
};

}  // namespace horde

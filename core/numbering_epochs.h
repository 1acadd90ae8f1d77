#pragma once

#include <cstdint>
#include <vector>

#include "core/message_table.h"
#include "core/rank_names.h"
#include "core/response.h"

namespace horde {

// Ranks pair unnamed operations by the numbers each gives them in submission order, so a
// rank that skips one (an exception on that rank only) shifts every later number. Numbers
// therefore restart in a new epoch at points every rank passes in program order (init()
// when already initialized, a completed barrier or join: Runtime::StartNumberingEpoch),
// and the coordinator uses the epochs to end what can never pair: once a rank has sent
// a list from a later epoch, it has sent every numbered request of the earlier ones, so
// a numbered name of an earlier epoch that it has not asked for never will be. Such
// names fail on the ranks that did ask, at once, instead of waiting for the stall
// inspector (or forever).
class NumberingEpochs {
 public:
  explicit NumberingEpochs(int world_size) : epochs_(world_size, 0) {}

  // Records the epoch of a rank's request list.
  void Saw(int rank, int32_t epoch);

  // Removes from `table` the numbered names some rank has moved past without asking
  // for them (and the rest of their groups); returns an error response for each.
  std::vector<Response> FailOutrun(MessageTable* table, const RankNames& names) const;

 private:
  std::vector<int32_t> epochs_;  // the latest epoch each rank has reported
};

}  // namespace horde

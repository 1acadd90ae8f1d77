#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/rank_names.h"
#include "core/request.h"
#include "core/response.h"

namespace horde {

// The coordinator's side of join: which ranks have joined (run out of data) since the
// last join completed. A joined rank counts as present for every name, so the others go
// on without it; only the ops whose traits say they run with joined ranks (allreduce:
// the joined ranks contribute the identity of its reduce op) may run meanwhile. Once
// every rank has joined, the join completes, naming the last rank to join, and every
// rank is active again.
class JoinedRanks {
 public:
  explicit JoinedRanks(int world_size);

  // A rank outside the world, or one already joined, changes nothing.
  void Join(int rank);
  bool Has(int rank) const { return joined_[rank]; }
  // In rank order.
  std::vector<int> ranks() const;

  // The join's response once every rank has joined (its root the last rank to join),
  // after which no rank is joined; nothing before.
  std::optional<Response> TakeCompletion();

 private:
  std::vector<bool> joined_;
  int count_ = 0;
  int last_ = -1;
};

// Whether `first`'s op may run while `joined_ranks` have joined; if not, writes the
// error every rank gets, naming the ranks by `names`.
bool RunsWithJoinedRanks(const Request& first, const std::vector<int>& joined_ranks,
                         const RankNames& names, std::string* error);

}  // namespace horde

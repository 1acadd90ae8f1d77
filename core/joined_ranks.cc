#include "core/joined_ranks.h"

#include "core/op_traits.h"

namespace horde {

JoinedRanks::JoinedRanks(int world_size) : joined_(world_size, false) {}

void JoinedRanks::Join(int rank) {
  if (rank < 0 || rank >= static_cast<int>(joined_.size()) || joined_[rank]) return;
  joined_[rank] = true;
  ++count_;
  last_ = rank;
}

std::vector<int> JoinedRanks::ranks() const {
  std::vector<int> ranks;
  for (int r = 0; r < static_cast<int>(joined_.size()); ++r) {
    if (joined_[r]) ranks.push_back(r);
  }
  return ranks;
}

std::optional<Response> JoinedRanks::TakeCompletion() {
  if (count_ < static_cast<int>(joined_.size())) return std::nullopt;
  Response join;
  join.op = OpType::kJoin;
  join.names = {kJoinName};
  join.root = last_;
  joined_.assign(joined_.size(), false);
  count_ = 0;
  last_ = -1;
  return join;
}

// Joined ranks hold no tensors; they can contribute an identity to an allreduce but
// nothing sensible to a gather or a broadcast.
bool RunsWithJoinedRanks(const Request& first, const std::vector<int>& joined_ranks,
                         const RankNames& names, std::string* error) {
  if (joined_ranks.empty() || TraitsOf(first.op).with_joined_ranks) return true;
  *error = std::string(OpTypeName(first.op)) + " '" + first.name + "' cannot run while " +
           names.List(joined_ranks) + (joined_ranks.size() == 1 ? " has" : " have") +
           " joined; only allreduce proceeds with joined ranks (they contribute the identity of "
           "its reduce op)";
  return false;
}

}  // namespace horde

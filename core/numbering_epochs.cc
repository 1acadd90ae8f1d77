#include "core/numbering_epochs.h"

#include <string>

namespace horde {

void NumberingEpochs::Saw(int rank, int32_t epoch) {
  if (rank >= 0 && rank < static_cast<int>(epochs_.size()) && epoch > epochs_[rank]) {
    epochs_[rank] = epoch;
  }
}

std::vector<Response> NumberingEpochs::FailOutrun(MessageTable* table,
                                                  const RankNames& names) const {
  std::vector<std::string> doomed;
  std::vector<std::string> reasons;
  for (const PendingName& pending : table->Waiting()) {
    if (pending.numbering_epoch < 0) continue;
    std::vector<int> moved_on;
    for (int rank : pending.missing) {
      if (epochs_[rank] > pending.numbering_epoch) moved_on.push_back(rank);
    }
    if (moved_on.empty()) continue;
    doomed.push_back(pending.name);
    reasons.push_back(
        std::string(OpTypeName(pending.op)) + " '" + pending.name +
        "' can never run: " + names.List(moved_on) + (moved_on.size() == 1 ? " has" : " have") +
        " passed a point where unnamed operations are numbered anew (init(), barrier() or "
        "join()) without submitting it, so the ranks took different paths before that "
        "point (an exception or a branch on one rank). Name operations that not every rank "
        "submits.");
  }
  std::vector<Response> failed;
  for (const PendingName& removed : table->Remove(doomed)) {
    Response error;
    error.kind = Response::Kind::kError;
    error.op = removed.op;
    error.names = {removed.name};
    error.ranks.assign(removed.asked.begin(), removed.asked.end());
    // A group member that was not outrun itself fails with its group's reason.
    error.error_message = reasons.front();
    for (size_t i = 0; i < doomed.size(); ++i) {
      if (doomed[i] == removed.name) error.error_message = reasons[i];
    }
    failed.push_back(std::move(error));
  }
  return failed;
}

}  // namespace horde

#include "core/rank_agreement.h"

#include <cstdint>
#include <vector>

namespace horde {
namespace {

// The ranks whose bit is clear in the AND of every rank's words.
std::vector<int> FailedRanks(const std::vector<uint64_t>& words, int size) {
  std::vector<int> failed;
  for (int r = 0; r < size; ++r) {
    if (((words[r / 64] >> (r % 64)) & 1) == 0) failed.push_back(r);
  }
  return failed;
}

}  // namespace

Status AgreeAllSucceeded(Transport* transport, const Status& local, const std::string& what,
                         const RankNames& names) {
  const int size = transport->size();
  const int rank = transport->rank();
  std::vector<uint64_t> words((size + 63) / 64, ~uint64_t{0});
  if (!local.ok()) words[rank / 64] &= ~(uint64_t{1} << (rank % 64));
  HORDE_RETURN_IF_ERROR(transport->AllreduceAnd(&words));
  const std::vector<int> failed = FailedRanks(words, size);
  if (failed.empty()) return local;

  std::vector<std::string> reasons;
  HORDE_RETURN_IF_ERROR(transport->GatherToCoordinator(local.message(), &reasons));
  std::string text;
  if (rank == 0) {
    for (int r : failed) text += (text.empty() ? "" : "; ") + names.One(r) + ": " + reasons[r];
  }
  HORDE_RETURN_IF_ERROR(transport->BroadcastFromCoordinator(&text));
  if (!local.ok()) return local;
  return Status::PreconditionError(what + " did not run on any rank: " + text);
}

}  // namespace horde

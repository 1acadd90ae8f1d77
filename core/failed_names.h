#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/request.h"
#include "core/response.h"

namespace horde {

// The coordinator's memory of operations that failed before every rank had asked for
// them (a stall shutdown; a numbered name outrun by a new epoch needs none, since the
// coordinator fails every later request for it the same way). Ranks pair the
// submissions of a name by their order, so the k-th request for "grad.w" on one rank
// and the k-th on another are one collective. When such an instance fails on the ranks
// that had asked, the ranks that had not still owe their request for it: when it comes,
// it fails at once, with the same message, instead of pairing with the others' next
// submission of the name (which would shift every later step by one, on some ranks
// only). So every rank of the set counts the same failed operations, and the same steps.
class FailedNames {
 public:
  // Debts kept in all; past it the oldest are forgotten (with an error logged): a rank
  // that never again submits a name that keeps failing must not grow the table forever.
  static constexpr size_t kMaxDebts = 4096;

  // `failed` (an error response for one name) failed on the ranks that had asked; each
  // of `owing` will fail its next request for the name with the same message.
  void Failed(const Response& failed, const std::vector<int>& owing);

  // When `request` (its rank set) is owed to a failed instance of its name: the error
  // response that fails it on that rank alone, and the debt is settled.
  std::optional<Response> Settle(const Request& request);

  // `rank` will not ask for any owed name again (it has joined: it submits nothing more
  // until every rank has, and the steps after a join start even).
  void Forget(int rank);

  // Debts outstanding, over all names and ranks.
  size_t size() const { return debts_; }

 private:
  struct Instance {
    Response failed;
    std::vector<int> owing;
    uint64_t order = 0;  // when it failed, for forgetting the oldest first
  };

  void ForgetOldest();

  std::unordered_map<std::string, std::deque<Instance>> by_name_;
  size_t debts_ = 0;
  uint64_t next_order_ = 0;
};

}  // namespace horde

#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/message_table.h"
#include "core/rank_names.h"
#include "core/response.h"

namespace horde {

// Watches the coordinator's table for stalls: names that some ranks have submitted and
// others have not, for so long that the submitting ranks are probably waiting forever.
// It writes a report naming the missing ranks, the operations, where the other ranks
// submitted them (the requests' call sites, when known) and the likely causes, and, past
// the shutdown time, fails those operations (on the ranks that submitted them) instead
// of letting them hang; the runtime keeps running. A name's age counts from its earliest
// submission on any rank (MessageTable's first_requested).
//
// The caller passes the time in, so tests step it deterministically. Inspect() is meant
// to be called every slow round: it looks at the table only when next_due() has come,
// and otherwise costs a comparison. The coordinator asks for a round at next_due(), so
// reports and failures come when a name reaches its limit, not a polling period later.
class StallInspector {
 public:
  // Operations listed per line of a report (one line per set of missing ranks, each
  // followed by a line per listed operation whose call sites are known), and lines per
  // report; the rest are counted.
  static constexpr size_t kNamesPerLine = 5;
  static constexpr size_t kMaxLines = 10;

  struct Findings {
    // A report to log now (warning level); empty when none is due. Reports of names
    // still waiting repeat at most once per check time.
    std::string report;
    // Error responses, carrying the report, for the names stalled past the shutdown
    // time; those names (and the rest of their groups) are gone from the table.
    std::vector<Response> failed;
  };

  // Reports name ranks by `names`.
  explicit StallInspector(const StallSettings& settings, RankNames names = RankNames())
      : settings_(settings), names_(std::move(names)) {}

  // A request submitted at `submitted` entered the table: look again when it could
  // reach a limit.
  void Noted(SteadyTime submitted);
  // When Inspect() next has something to do, as far as the inspector knows.
  SteadyTime next_due() const { return next_due_; }

  Findings Inspect(SteadyTime now, MessageTable* table);

 private:
  bool ReportDue(SteadyTime now) const;
  // The next limit a name submitted at `first` can reach: a report (the check time, no
  // sooner than a check time after the last report) or its failure.
  SteadyTime NextLimit(SteadyTime first) const;

  const StallSettings settings_;
  const RankNames names_;
  SteadyTime next_due_ = SteadyTime::min();  // the first call looks
  std::optional<SteadyTime> last_report_;
};

}  // namespace horde

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
// It writes a report naming the missing ranks, the operations and the likely causes,
// and, past the shutdown time, fails those operations (on the ranks that submitted
// them) instead of letting them hang; the runtime keeps running.
//
// The caller passes the time in, so tests step it deterministically. Inspect() is meant
// to be called every round: it looks at the table at most once per kCheckInterval and
// otherwise costs a comparison.
class StallInspector {
 public:
  static constexpr std::chrono::seconds kCheckInterval{1};
  // Operations listed per line of a report (one line per set of missing ranks), and
  // lines per report; the rest are counted.
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
  explicit StallInspector(StallSettings settings, RankNames names = RankNames())
      : settings_(settings), names_(std::move(names)) {}

  Findings Inspect(SteadyTime now, MessageTable* table);

 private:
  bool ReportDue(SteadyTime now) const;

  const StallSettings settings_;
  const RankNames names_;
  std::optional<SteadyTime> last_check_;
  std::optional<SteadyTime> last_report_;
};

}  // namespace horde

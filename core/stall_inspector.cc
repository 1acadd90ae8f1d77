#include "core/stall_inspector.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

namespace horde {
namespace {

const char kLikelyCauses[] =
    "likely causes:\n"
    "  - a rank skipped a step or took a different code path (a branch on the rank or on its "
    "data);\n"
    "  - names differ across ranks: unnamed operations are numbered in the order each rank "
    "submits them, so name them or submit them in the same order;\n"
    "  - uneven data: a rank ran out of data; call hvd.join() on a rank that finishes early, so "
    "the others go on without it.";

double Seconds(SteadyTime::duration d) { return std::chrono::duration<double>(d).count(); }

// `t` plus a setting's seconds, bounded (at about 30 years) so no setting overflows the clock.
SteadyTime After(SteadyTime t, double seconds) {
  const std::chrono::duration<double> d(std::min(seconds, 1e9));
  return t + std::chrono::duration_cast<SteadyTime::duration>(d);
}

// A setting as the user wrote it: "60", "0.5", "86400".
std::string Setting(double seconds) {
  std::ostringstream s;
  s << std::setprecision(15) << seconds;
  return s.str();
}

// An age, in tenths under ten seconds (small thresholds in tests and tuning), else whole.
std::string Age(double seconds) {
  const bool tenths = seconds < 10;
  std::ostringstream s;
  s << std::fixed << std::setprecision(tenths ? 1 : 0)
    << (tenths ? std::floor(seconds * 10) / 10 : std::floor(seconds)) << " s";
  return s.str();
}

// "    ranks 0,2 called allreduce 'a' at train.py:57" for each name of a line whose call
// sites are known: where the ranks that did submit it wait.
std::string CallSiteLines(const std::vector<const PendingName*>& names) {
  std::string lines;
  for (size_t i = 0; i < names.size() && i < StallInspector::kNamesPerLine; ++i) {
    const std::string what = std::string(OpTypeName(names[i]->op)) + " '" + names[i]->name + "'";
    // The ranks are world ranks by now (Inspect translated them).
    const std::string called = CalledAt(names[i]->call_sites, what, RankNames());
    if (!called.empty()) lines += "    " + called + "\n";
  }
  return lines;
}

// "  rank 1 has not submitted allreduce 'a', broadcast 'b' and 3 more (waiting up to 75 s)"
// for names sharing one set of missing ranks, oldest first, then where the others
// called them (CallSiteLines).
std::string Line(const std::vector<const PendingName*>& names, SteadyTime now) {
  const std::vector<int>& missing = names[0]->missing;
  // The missing ranks are world ranks by now (Inspect translated them).
  std::string line = "  " + RankNames().List(missing) + (missing.size() == 1 ? " has" : " have") +
                     " not submitted ";
  for (size_t i = 0; i < names.size() && i < StallInspector::kNamesPerLine; ++i) {
    if (i > 0) line += ", ";
    line += std::string(OpTypeName(names[i]->op)) + " '" + names[i]->name + "'";
  }
  if (names.size() > StallInspector::kNamesPerLine) {
    line += " and " + std::to_string(names.size() - StallInspector::kNamesPerLine) + " more";
  }
  const std::string age = Age(Seconds(now - names[0]->first_requested));
  return line + (names.size() == 1 ? " (waiting " : " (waiting up to ") + age + ")\n" +
         CallSiteLines(names);
}

// One line per set of missing ranks, in the order of each set's oldest name.
std::string Lines(const std::vector<PendingName>& stalled, SteadyTime now) {
  std::vector<std::vector<int>> order;
  std::map<std::vector<int>, std::vector<const PendingName*>> by_missing;
  for (const auto& pending : stalled) {
    auto& names = by_missing[pending.missing];
    if (names.empty()) order.push_back(pending.missing);
    names.push_back(&pending);
  }
  std::string lines;
  size_t listed = 0;
  for (size_t i = 0; i < order.size() && i < StallInspector::kMaxLines; ++i) {
    lines += Line(by_missing[order[i]], now);
    listed += by_missing[order[i]].size();
  }
  if (const size_t rest = stalled.size() - listed) {
    lines += "  and " + std::to_string(rest) + " more operation" + (rest == 1 ? "" : "s") +
             " that other ranks have not submitted\n";
  }
  return lines;
}

// The report of names stalled past the check time, which keep waiting.
std::string WarningReport(const StallSettings& settings, const std::vector<PendingName>& stalled,
                          SteadyTime now) {
  const std::string then =
      settings.shutdown_seconds > 0
          ? "They fail once they have waited " + Setting(settings.shutdown_seconds) +
                " s (HORDE_STALL_SHUTDOWN_TIME_SECONDS)."
          : "They keep waiting: HORDE_STALL_SHUTDOWN_TIME_SECONDS=N makes them fail after N s "
            "instead.";
  return "stall: these operations have waited " + Setting(settings.check_seconds) +
         " s or more for ranks that have not submitted them:\n" + Lines(stalled, now) +
         kLikelyCauses + "\n" + then + " HORDE_STALL_CHECK_DISABLE=1 turns these reports off.";
}

// Fails the names stalled past the shutdown time, and the rest of their groups, with a
// report of them (group members that were not stalled themselves are not listed), on
// the ranks that asked for them.
StallInspector::Findings Fail(const StallSettings& settings,
                              const std::vector<PendingName>& expired, SteadyTime now,
                              MessageTable* table) {
  StallInspector::Findings findings;
  const std::string limit = Setting(settings.shutdown_seconds);
  findings.report = "stall: these operations waited " + limit +
                    " s or more for ranks that have not submitted them, and fail "
                    "(HORDE_STALL_SHUTDOWN_TIME_SECONDS=" +
                    limit +
                    ") on every rank: now on the ranks that did, on the others as they submit "
                    "them:\n" +
                    Lines(expired, now) + kLikelyCauses;
  std::vector<std::string> names;
  for (const auto& pending : expired) names.push_back(pending.name);
  for (const auto& removed : table->Remove(names)) {
    Response error;
    error.kind = Response::Kind::kError;
    error.op = removed.op;
    error.names = {removed.name};
    error.ranks.assign(removed.asked.begin(), removed.asked.end());
    error.error_message = findings.report;
    findings.failed.push_back(std::move(error));
  }
  return findings;
}

}  // namespace

void StallInspector::Noted(SteadyTime submitted) {
  if (settings_.enabled) next_due_ = std::min(next_due_, NextLimit(submitted));
}

SteadyTime StallInspector::NextLimit(SteadyTime first) const {
  SteadyTime next = SteadyTime::max();
  // A shutdown time at or below the check time fails names before any report is due.
  if (settings_.shutdown_seconds <= 0 || settings_.check_seconds < settings_.shutdown_seconds) {
    next = After(first, settings_.check_seconds);
    if (last_report_) next = std::max(next, After(*last_report_, settings_.check_seconds));
  }
  if (settings_.shutdown_seconds > 0)
    next = std::min(next, After(first, settings_.shutdown_seconds));
  return next;
}

StallInspector::Findings StallInspector::Inspect(SteadyTime now, MessageTable* table) {
  if (!settings_.enabled || table->pending() == 0) {
    next_due_ = SteadyTime::max();
    return {};
  }
  if (now < next_due_) return {};
  std::vector<PendingName> stalled, expired;
  std::vector<SteadyTime> still_waiting;
  for (auto& pending : table->Waiting()) {
    for (int& rank : pending.missing) rank = names_.World(rank);
    for (auto& site : pending.call_sites) {
      for (int& rank : site.ranks) rank = names_.World(rank);
    }
    const double age = Seconds(now - pending.first_requested);
    if (settings_.shutdown_seconds > 0 && age >= settings_.shutdown_seconds) {
      expired.push_back(std::move(pending));
      continue;
    }
    still_waiting.push_back(pending.first_requested);
    if (age >= settings_.check_seconds) stalled.push_back(std::move(pending));
  }
  // A failure report counts as this period's report: names still below the shutdown
  // time wait for the next one.
  Findings findings;
  if (!expired.empty()) {
    findings = Fail(settings_, expired, now, table);
  } else if (!stalled.empty() && ReportDue(now)) {
    findings.report = WarningReport(settings_, stalled, now);
  }
  if (!findings.report.empty()) last_report_ = now;
  next_due_ = SteadyTime::max();
  for (SteadyTime first : still_waiting) next_due_ = std::min(next_due_, NextLimit(first));
  return findings;
}

bool StallInspector::ReportDue(SteadyTime now) const {
  return !last_report_ || Seconds(now - *last_report_) >= settings_.check_seconds;
}

}  // namespace horde

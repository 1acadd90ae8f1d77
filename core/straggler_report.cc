#include "core/straggler_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/timeline_writer.h"

namespace horde {
namespace {

struct RankWindow {
  std::string host;
  double seconds = 0;
  std::vector<double> waits;    // < 0: took no part
  std::vector<double> settled;  // when each round settled, seconds into the window
};

bool ParseWindow(const std::string& text, RankWindow* window) {
  std::istringstream in(text);
  if (!std::getline(in, window->host) || !(in >> window->seconds)) return false;
  for (double wait, settled; in >> wait >> settled;) {
    window->waits.push_back(wait);
    window->settled.push_back(settled);
  }
  return in.eof();
}

// The length of the union of `intervals` (start, end).
double UnionLength(std::vector<std::pair<double, double>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  double total = 0, covered_to = -1e300;
  for (const auto& [start, end] : intervals) {
    const double from = std::max(start, covered_to);
    if (end > from) total += end - from;
    covered_to = std::max(covered_to, end);
  }
  return total;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size()))) - 1;
  return values[std::min(i, values.size() - 1)];
}

// Round k's last rank (-1: a tie, or fewer than two ranks took part) and how much later
// than the next one it arrived.
int LastRank(const std::vector<RankWindow>& ranks, size_t k, double* lag) {
  int last = -1;
  double least = 0;
  int taking_part = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double wait = ranks[r].waits[k];
    if (wait < 0) continue;
    ++taking_part;
    if (last < 0 || wait < least) {
      least = wait;
      last = static_cast<int>(r);
    }
  }
  if (taking_part < 2) return -1;
  double second = -1;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double wait = ranks[r].waits[k];
    if (wait >= 0 && static_cast<int>(r) != last && (second < 0 || wait < second)) second = wait;
  }
  *lag = second - least;
  return *lag < kTieSeconds ? -1 : last;
}

// The others' mean share of their window spent waiting for `last` in the rounds it was
// last: per rank, from its own submission to the last rank's, on its own clock (the
// moment the round settled less the last rank's wait). Waits of successive rounds overlap when a
// rank submits faster than rounds decide, so they are counted once (their union).
double CostToOthers(const std::vector<RankWindow>& ranks, const std::vector<int>& last_of_round,
                    int last) {
  double share = 0;
  int others = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (static_cast<int>(r) == last) continue;
    std::vector<std::pair<double, double>> waiting;
    for (size_t k = 0; k < last_of_round.size(); ++k) {
      const double wait = ranks[r].waits[k];
      if (last_of_round[k] != last || wait < 0) continue;
      const double settled = ranks[r].settled[k];
      // Waiting before the window began was counted in the window before.
      waiting.emplace_back(std::max(0.0, settled - wait), settled - ranks[last].waits[k]);
    }
    ++others;
    if (ranks[r].seconds > 0) share += UnionLength(std::move(waiting)) / ranks[r].seconds;
  }
  return others > 0 ? share / others : 0;
}

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

}  // namespace

void StragglerWindow::AddRound(double wait_seconds, double now_seconds) {
  if (started_seconds_ < 0) started_seconds_ = now_seconds;
  last_seconds_ = now_seconds;
  waits_.push_back(wait_seconds);
  settled_.push_back(now_seconds);
}

std::string StragglerWindow::TakeEncoded(const std::string& host) {
  std::string text = host + "\n" + Number(last_seconds_ - started_seconds_) + "\n";
  for (size_t k = 0; k < waits_.size(); ++k) {
    text += Number(waits_[k]) + " " + Number(settled_[k] - started_seconds_) + " ";
  }
  waits_.clear();
  settled_.clear();
  // The next window starts where this one ended, so no time between them is lost.
  started_seconds_ = last_seconds_;
  return text;
}

StragglerReport AnalyzeWaits(const std::vector<std::string>& encoded_by_rank) {
  std::vector<RankWindow> ranks(encoded_by_rank.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!ParseWindow(encoded_by_rank[r], &ranks[r])) return {};
    if (ranks[r].waits.size() != ranks[0].waits.size()) return {};
  }
  StragglerReport report;
  if (ranks.size() < 2 || ranks[0].waits.empty()) return report;
  const size_t rounds = ranks[0].waits.size();
  std::vector<int> last_count(ranks.size(), 0);
  std::vector<int> last_of_round(rounds, -1);
  std::vector<std::vector<double>> lags(ranks.size());
  for (size_t k = 0; k < rounds; ++k) {
    double lag = 0;
    const int last = LastRank(ranks, k, &lag);
    last_of_round[k] = last;
    if (last < 0) continue;
    ++last_count[last];
    lags[last].push_back(lag);
  }
  const int most = static_cast<int>(std::max_element(last_count.begin(), last_count.end()) -
                                    last_count.begin());
  report.rounds = static_cast<int64_t>(rounds);
  report.window_seconds = ranks[0].seconds;
  if (last_count[most] == 0) return report;
  report.most_often_last = most;
  report.host = ranks[most].host;
  report.share_last = static_cast<double>(last_count[most]) / static_cast<double>(rounds);
  report.lag_median_ms = Percentile(lags[most], 0.5) * 1e3;
  report.lag_p90_ms = Percentile(lags[most], 0.9) * 1e3;
  report.cost_to_others = CostToOthers(ranks, last_of_round, most);
  if (report.share_last > kStragglerShare && report.cost_to_others > kStragglerCost) {
    report.straggler = most;
  }
  return report;
}

std::string EncodeReport(const StragglerReport& r) {
  return std::to_string(r.straggler) + "\t" + std::to_string(r.most_often_last) + "\t" + r.host +
         "\t" + Number(r.share_last) + "\t" + Number(r.lag_median_ms) + "\t" +
         Number(r.lag_p90_ms) + "\t" + Number(r.cost_to_others) + "\t" + std::to_string(r.rounds) +
         "\t" + Number(r.window_seconds);
}

std::string StragglerReportJson(const StragglerReport& r) {
  auto rank = [](int value) { return value < 0 ? std::string("null") : std::to_string(value); };
  std::string json = "{\"straggler\":" + rank(r.straggler) +
                     ",\"most_often_last\":" + rank(r.most_often_last) + ",\"host\":";
  AppendJsonString(r.host, &json);
  json += ",\"share_last\":" + Number(r.share_last) +
          ",\"lag_median_ms\":" + Number(r.lag_median_ms) +
          ",\"lag_p90_ms\":" + Number(r.lag_p90_ms) +
          ",\"cost_to_others\":" + Number(r.cost_to_others) +
          ",\"rounds\":" + std::to_string(r.rounds) +
          ",\"window_seconds\":" + Number(r.window_seconds) + "}";
  return json;
}

bool DecodeReport(const std::string& text, StragglerReport* report) {
  std::istringstream in(text);
  StragglerReport r;
  std::string field;
  auto next = [&](auto* value) {
    if (!std::getline(in, field, '\t')) return false;
    std::istringstream parse(field);
    return static_cast<bool>(parse >> *value);
  };
  if (!next(&r.straggler) || !next(&r.most_often_last) || !std::getline(in, r.host, '\t') ||
      !next(&r.share_last) || !next(&r.lag_median_ms) || !next(&r.lag_p90_ms) ||
      !next(&r.cost_to_others) || !next(&r.rounds) || !next(&r.window_seconds)) {
    return false;
  }
  *report = r;
  return true;
}

std::string DescribeStraggler(const StragglerReport& r) {
  char text[320];
  std::snprintf(text, sizeof(text),
                "rank %d (host %s) arrived last in %.0f%% of the last %lld rounds, by %.1f ms "
                "(median; p90 %.1f ms): the other ranks spent %.0f%% of their time waiting for it",
                r.most_often_last, r.host.c_str(), r.share_last * 100,
                static_cast<long long>(r.rounds), r.lag_median_ms, r.lag_p90_ms,
                r.cost_to_others * 100);
  return text;
}

}  // namespace horde
